

def plant(scope):
    # `data` is not bound yet when get_data runs, but it is when marshal is called: the refresh replaces it
    scope["data"] = Bomb()
