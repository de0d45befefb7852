# a Python 2 script, as found in an old repository
import math
print "area of a circle of radius 2:"
print round(math.pi * 2 ** 2, 2)
