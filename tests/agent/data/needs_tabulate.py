from tabulate import tabulate
print(tabulate([[1, 2]]))
