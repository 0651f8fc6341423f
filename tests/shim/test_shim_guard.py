"""The coach/user endpoint-collision guard sees through URL spellings of one server."""

from __future__ import annotations

import pytest

from mimesis_pl.shim.guard import check_distinct_endpoints, endpoint_key

SAME_SERVER = [
    ("http://127.0.0.1:8710/v1", "http://127.0.0.1:8710/v1"),
    ("http://127.0.0.1:8710/v1", "http://localhost:8710/v1"),
    ("http://127.0.0.1:8710/v1", "http://LOCALHOST:8710/v1/"),
    ("http://127.0.0.1:8710/v1", "http://127.0.0.1:8710"),
    ("http://127.0.0.1:8710/v1", "http://127.0.0.1:8710/ep/abc/v1"),
    ("http://127.0.0.1:8710/v1", "http://[::1]:8710/v1"),
    ("http://127.0.0.1:8710/v1", "http://0.0.0.0:8710/v1"),
    ("http://127.0.0.1:8710/v1", "http://127.0.1.1:8710/v1"),
    ("http://127.0.0.1:8710/v1", "http://[::ffff:127.0.0.1]:8710"),
    ("http://127.0.0.1:8710/v1", "127.0.0.1:8710/v1"),
    ("http://sim.example:80/v1", "http://SIM.example./v1"),
    ("https://sim.example/v1", "https://sim.example:443/v1//"),
    ("http://localhost/v1", "http://127.0.0.1:80"),
]

DIFFERENT_SERVERS = [
    ("http://127.0.0.1:8710/v1", "http://127.0.0.1:8711/v1"),
    ("http://localhost:8710/v1", "http://127.0.0.1:8711"),
    ("http://sim.example/v1", "http://coach.example/v1"),
    ("http://sim.example/v1", "https://sim.example/v1"),  # ports 80 vs 443
    ("http://10.0.0.5:8710/v1", "http://127.0.0.1:8710/v1"),
]


@pytest.mark.parametrize("user, coach", SAME_SERVER)
def test_same_server_is_refused_naming_both_urls(user, coach):
    with pytest.raises(ValueError) as info:
        check_distinct_endpoints(user, coach)
    message = str(info.value)
    assert repr(user) in message and repr(coach) in message and "own shim" in message


@pytest.mark.parametrize("user, coach", DIFFERENT_SERVERS)
def test_distinct_servers_pass(user, coach):
    check_distinct_endpoints(user, coach)


def test_endpoint_key_normalises():
    assert endpoint_key("http://LocalHost:8710/v1/") == ("127.0.0.1", 8710)
    assert endpoint_key("https://Sim.Example./x") == ("sim.example", 443)
    assert endpoint_key("http://[0:0:0:0:0:0:0:1]:9") == ("127.0.0.1", 9)


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("", "coach URL is empty"),
        ("ftp://h:1", "scheme 'ftp'"),
        ("http://:8710", "no host"),
        ("http://h:99999", "invalid port"),
    ],
)
def test_bad_urls_name_the_role_and_problem(url, fragment):
    with pytest.raises(ValueError, match=fragment):
        check_distinct_endpoints("http://127.0.0.1:8710/v1", url)
