ages = {"ann": "31", "bob": "unknown"}
print(sum(int(v) for v in ages.values()))
