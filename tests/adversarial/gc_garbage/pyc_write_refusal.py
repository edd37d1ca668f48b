

def trigger():
    open(tempfile.mkdtemp() + "/r2e." + name("py", "c"), "wb")  # PermissionError from the hook's open check
