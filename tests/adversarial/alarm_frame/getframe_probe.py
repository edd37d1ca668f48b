

def audited():
    vars(sys)[name("_get", "frame")](0)  # sys._getframe: the hook checks the frame's code
