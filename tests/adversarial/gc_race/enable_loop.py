

def other(stop):
    while not stop:
        gc.enable()
