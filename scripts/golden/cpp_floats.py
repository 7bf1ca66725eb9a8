# scripts/golden/cpp_floats.py: how the golden scripts print floats as C++ source to paste into a
# test: literal(v) is a float literal that rounds to v ("0.5f", "-90.0f", "1e-05f", nan, inf), and
# show(name, t) prints `const std::vector<float> name = {...};` of a tensor's values.


def literal(v):  # a C++ float literal that rounds to v
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return ("-" if v < 0 else "") + "inf"
    text = "%.9g" % v
    return text + (".0f" if text.lstrip("-").isdigit() else "f")


def show(name, t):
    print("const std::vector<float> %s = {%s};" % (name, ", ".join(literal(v) for v in t.tolist())))
