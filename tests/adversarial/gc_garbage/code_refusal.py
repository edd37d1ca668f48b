

def trigger():
    member(f, name("__co", "de__"))  # the hook's CodeRefused, raised by refuse_attribute()
