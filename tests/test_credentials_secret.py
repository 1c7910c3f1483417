"""Secret: the value comes out through get() and through nothing else."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from tether.credentials import Secret

VALUE = "correct-horse-battery-staple"


def test_get_returns_value() -> None:
    assert Secret(VALUE).get() == VALUE


def test_text_routes_are_masked() -> None:
    secret = Secret(VALUE)
    assert repr(secret) == str(secret) == format(secret) == f"{secret}" == "Secret('****')"
    assert f"{secret!r:>20}" == "      Secret('****')"
    assert f"{secret:^16}" == " Secret('****') "
    assert "%s %r" % (secret, secret) == "Secret('****') Secret('****')"  # noqa: UP031
    assert VALUE not in repr([secret, {"k": secret}, (secret,)])


def test_equality_is_by_value_and_only_between_secrets() -> None:
    assert Secret(VALUE) == Secret(VALUE)
    assert Secret(VALUE) != Secret("other")
    assert Secret(VALUE) != VALUE
    assert hash(Secret(VALUE)) == hash(Secret(VALUE))
    assert len({Secret(VALUE), Secret(VALUE)}) == 1


def test_pickle_is_refused_with_advice() -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError, match=r"cannot be pickled.*ScopedTokens"):
            pickle.dumps(Secret(VALUE), protocol=protocol)
    with pytest.raises(TypeError):
        pickle.dumps({"nested": [Secret(VALUE)]})


def test_copies_are_the_same_immutable_object() -> None:
    secret = Secret(VALUE)
    assert copy.copy(secret) is secret and copy.deepcopy(secret) is secret
    assert copy.deepcopy({"s": secret})["s"] is secret


def test_json_refuses() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps({"password": Secret(VALUE)})
    assert VALUE not in json.dumps({"password": Secret(VALUE)}, default=str)


def test_immutable_and_slotted() -> None:
    secret = Secret(VALUE)
    with pytest.raises(AttributeError, match="immutable"):
        secret._value = "x"
    with pytest.raises(AttributeError):
        del secret._value
    with pytest.raises(TypeError):
        vars(secret)


def test_bad_values() -> None:
    with pytest.raises(TypeError, match="wraps a str, got int"):
        Secret(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be empty"):
        Secret("")


def test_failed_assertion_does_not_show_value() -> None:
    left, right = Secret(VALUE), Secret(VALUE + "x")
    with pytest.raises(AssertionError) as info:
        assert left == right
    assert VALUE not in str(info.value)
