# forgets an import
values = [1.5, 2.5, 3.0]
print(math.fsum(values))
print(math.sqrt(16))
