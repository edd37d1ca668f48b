import pytest


@pytest.fixture
def pancakes():
    return {"flour": 2.0, "milk": 1.5, "eggs": 2.0}
