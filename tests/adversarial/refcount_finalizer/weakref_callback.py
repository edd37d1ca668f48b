
KEEP = []


class Target:
    pass


def plant(scope):
    target = Target()
    KEEP.append(weakref.ref(target, lambda ref: disarm()))  # the callback runs when `target` is freed
    scope["path"] = target
