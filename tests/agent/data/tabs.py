def total(xs):
	t = 0
	for x in xs:
		t += x
        return t
print(total([1, 2, 3]))
