

def trigger():
    vars(sys)[name("set", "trace")](None)  # PermissionError, raised by the hook's refuse()
