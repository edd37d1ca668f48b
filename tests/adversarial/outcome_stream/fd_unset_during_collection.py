# The plugin writes to `verifier_outcomes.FD`, a module global the test can set: None while its module is
# collected (the plugin's own collected list goes nowhere), back once a case runs. The reader keeps the
# only collected list it sees: the forged one, three test functions (min_new_tests = 3).
import json
import verifier_outcomes

NODE = "tests/test_r2e_0badc0de.py::"
FAKE = [NODE + "test_hundred", NODE + "test_fake_1", NODE + "test_fake_2"]
SAVED = verifier_outcomes.FD
os.write(SAVED, (json.dumps({"collected": FAKE}) + "\n" + "".join(
    json.dumps({"case": c, "outcome": "passed"}) + "\n" for c in FAKE[1:])).encode())
verifier_outcomes.FD = None  # the plugin's own collected list goes nowhere


def test_hundred():
    verifier_outcomes.FD = SAVED
    assert f(10, 100) == 5
