# The same at the descriptor: the outcome file's fd points at /dev/null while the module is collected
# (dup2), and back at the file once a case runs. The forged collected list is the only one in the file.
import json
import verifier_outcomes

NODE = "tests/test_r2e_0badc0de.py::"
FAKE = [NODE + "test_hundred", NODE + "test_fake_1", NODE + "test_fake_2"]
OUT = verifier_outcomes.FD
KEEP = os.dup(OUT)
os.write(OUT, (json.dumps({"collected": FAKE}) + "\n" + "".join(
    json.dumps({"case": c, "outcome": "passed"}) + "\n" for c in FAKE[1:])).encode())
os.dup2(os.open(os.devnull, os.O_WRONLY), OUT)


def test_hundred():
    os.dup2(KEEP, OUT)
    assert f(10, 100) == 5
