"""Who may use the inbox (``duraguard.inbox._access``), in plain Python: tokens, sessions, a
trusted proxy's header, CSRF tokens, and access files with mistakes in them."""

from __future__ import annotations

import pytest

from duraguard.errors import ConfigurationError
from duraguard.inbox import Access, Person, is_loopback, token_digest

TOKEN = "a-long-enough-token-0001"


def _access(**extra: object) -> Access:
    return Access.from_mapping(
        {
            "people": {
                "alice": {"token_sha256": token_digest(TOKEN), "rights": "decide"},
                "rita": {"rights": "read"},
            },
            **extra,
        }
    )


def _who(access: Access, **kw: object) -> Person | None:
    base: dict[str, object] = {"authorization": None, "cookie": None, "headers": {}, "peer": None}
    return access.identify(**{**base, **kw})  # type: ignore[arg-type]


def test_rights_include_the_ones_before_them() -> None:
    decide, see = Person("a", "decide", "bearer"), Person("b", "see", "bearer")
    assert decide.may("read") and decide.may("see") and decide.may("decide")
    assert see.may("see") and not see.may("read") and not see.may("decide")


def test_a_bearer_token_names_its_holder_and_nothing_else_does() -> None:
    access = _access()
    assert _who(access, authorization=f"Bearer {TOKEN}") == Person("alice", "decide", "bearer")
    assert _who(access, authorization="Bearer wrong") is None
    assert _who(access) is None


def test_a_session_cookie_cannot_be_forged_altered_or_kept_past_its_end() -> None:
    access = _access()
    alice = Person("alice", "decide", "bearer")
    cookie = access.session_cookie(alice, now=1000.0)
    who = access.session_person(cookie, now=1001.0)
    assert who is not None and who.name == "alice" and who.via == "session"
    assert access.session_person(cookie.replace("alice", "rita"), now=1001.0) is None
    assert access.session_person(cookie, now=1000.0 + 13 * 3600) is None
    other = Access.from_mapping({"people": {"alice": {"rights": "decide"}}})  # another secret
    assert other.session_person(cookie, now=1001.0) is None


def test_a_proxy_header_counts_only_from_the_proxy_itself() -> None:
    access = _access(proxy={"header": "X-Forwarded-User", "trusted": ["10.0.0.5"]})
    headers = {"x-forwarded-user": "rita"}
    assert _who(access, headers=headers, peer="10.0.0.5") == Person("rita", "read", "proxy")
    assert _who(access, headers=headers, peer="10.0.0.6") is None
    assert _who(access, headers={"x-forwarded-user": "mallory"}, peer="10.0.0.5") is None


def test_csrf_tokens_are_bound_to_the_session_and_not_needed_with_a_bearer_token() -> None:
    access = _access()
    one = access.session_person(access.session_cookie(Person("alice", "decide", "bearer")))
    assert one is not None
    token = access.csrf_token(one)
    assert access.csrf_ok(one, token)
    altered = token[:-1] + ("1" if token.endswith("0") else "0")  # one character other
    assert not access.csrf_ok(one, None) and not access.csrf_ok(one, altered)
    assert access.csrf_ok(Person("alice", "decide", "bearer"), None)
    opened = Access.open()
    anyone = _who(opened)
    assert anyone == Person(None, "decide", "open") and not opened.csrf_ok(anyone, None)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({}, "needs 'people:'"),
        ({"people": {"a": {"rights": "decide"}}, "users": {}}, "unknown key(s) users"),
        ({"people": {"a": "token"}}, "person 'a': write {token_sha256"),
        ({"people": {"a": {"token": "short"}}}, "at least 16 characters"),
        ({"people": {"a": {"pasword": "x"}}}, "unknown key(s) pasword"),
        ({"proxy": {"header": "X-User", "trusted": ["not-an-ip"]}}, "is not an address"),
        ({"proxy": {"trusted": ["127.0.0.1"]}}, "header: X-Forwarded-User"),
    ],
)
def test_access_file_mistakes_name_the_entry_and_the_fix(data: object, says: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        Access.from_mapping(data)
    assert says in str(err.value)


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.9.9.9"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "example.com", "::"))
