

def plant(scope):
    scope["self"] = Bomb()  # "self" is rewritten with the loader: the Bomb's __del__ runs in the hook
