from unitconv.length import feet_to_metres, metres_to_feet, parse_length


def test_feet_round_trip():
    assert metres_to_feet(feet_to_metres(10)) == 10


def test_parse_units():
    assert parse_length("12 ft") > 3
    assert parse_length("3.5m") == 3.5
