"""What graded checks share: saying how they decided, and refusing the package's own code as an answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def say(message: str) -> None:
    """Checks print how they decided, so feedback shows it."""
    print(f"[check] {message}")


def assert_own_function(
    fn: Any,
    *,
    n_params: int,
    what: str,
    references: Iterable[Callable[..., Any]] = (),
    forbidden: Iterable[str] = (),
    hint: str = "write it yourself",
) -> None:
    """The graded function was written in the notebook: the right arity, not a reference, calling none of them."""
    assert callable(fn), f"expected a function for {what}, got {type(fn).__name__}"
    code = getattr(fn, "__code__", None)
    assert code is not None and code.co_argcount == n_params, (
        f"{what} takes {n_params} argument(s); yours takes {code.co_argcount if code else '?'}"
    )
    for ref in references:
        owner = ref.__module__.split(".")[0]
        assert ref.__code__ is not code, f"this is {owner}'s own {what}: write your own in the notebook"
    used = [name for name in forbidden if name in code.co_names or name in code.co_freevars]
    assert not used, f"your {what} calls {', '.join(used)} from the package; {hint}"
