from unitconv.temperature import celsius_to_fahrenheit, comfort_label, fahrenheit_to_celsius


def test_boiling_point():
    assert celsius_to_fahrenheit(100) == 212


def test_freezing_point():
    assert fahrenheit_to_celsius(32) == 0


def test_labels():
    assert comfort_label(-5) == "freezing"
    assert comfort_label(35) == "hot"
