"""A safe arithmetic tool: parses the expression and evaluates a whitelist of nodes, never ``eval``.

Decision: the model's expression is untrusted input. It is parsed with ``ast`` and only numbers,
the arithmetic operators and a few pure math functions are evaluated; anything else (names,
attributes, calls to other functions, huge exponents) is a clear error the model can act on. It is
an async tool because it is pure, bounded CPU work: no thread is needed to time it out.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from tether.errors import RunError
from tether.tools.base import ToolArgumentError, ToolContext, ToolMeta
from tether.types import ToolSpec

MAX_EXPRESSION_CHARS = 500
MAX_EXPONENT = 10_000
MAX_MAGNITUDE = 10**308
MAX_INT_BITS = 100_000  # intermediate integers stay this small, so every step is fast

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max,
    "log": math.log, "exp": math.exp, "floor": math.floor, "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


class CalculatorError(RunError, ValueError):
    """The expression cannot be evaluated; the message says why, for the model to fix it."""


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely; raise CalculatorError with a usable message."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise CalculatorError(f"not an arithmetic expression: {expression!r}") from None
    try:
        value = _eval(tree.body)
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise CalculatorError(f"cannot compute: {exc}") from None
    if not isinstance(value, int | float) or value != value:  # complex, or NaN
        raise CalculatorError(f"result is not a real number: {value!r}")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculatorError("result too large")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(right) > MAX_EXPONENT:
                raise CalculatorError(f"exponent larger than {MAX_EXPONENT}")
            if (isinstance(left, int) and isinstance(right, int) and right > 0
                    and abs(left).bit_length() * right > MAX_INT_BITS):  # check before computing
                raise CalculatorError("intermediate result too large")
        return _bounded(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS and not node.keywords):
        args = [_eval(a) for a in node.args]
        if node.func.id == "round" and len(args) > 1 and abs(args[1]) > MAX_EXPONENT:
            raise CalculatorError(f"round() to more than {MAX_EXPONENT} digits")  # 10**n inside
        return _bounded(_FUNCTIONS[node.func.id](*args))
    allowed = ", ".join(sorted(_FUNCTIONS))
    raise CalculatorError(
        f"unsupported element {ast.unparse(node)!r}; use numbers, + - * / // % **, "
        f"parentheses, pi, e and {allowed}"
    )


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError("intermediate result too large")
    return value


def _format(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value)


class Calculator:
    """Evaluates arithmetic expressions: ``{"expression": "17 * 23"}`` → ``"391"``."""

    name = "calculator"
    meta = ToolMeta(tags=frozenset({"math"}), timeout=2.0, idempotent=True)
    spec = ToolSpec(
        "calculator",
        "Evaluate an arithmetic expression and return the number. Supports + - * / // % **, "
        "parentheses, pi, e, sqrt, abs, round, min, max, log, exp, floor, ceil.",
        {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. 17 * 23"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    )

    def __repr__(self) -> str:
        return "Calculator()"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        extra = set(arguments) - {"expression"}
        if extra:
            raise ToolArgumentError(sorted(extra)[0], "unexpected field; only 'expression'")
        expression = arguments.get("expression")
        if expression is None:
            raise ToolArgumentError("expression", "Field required")
        if not isinstance(expression, str):
            raise ToolArgumentError("expression", "must be a string such as '17 * 23'")
        return {"expression": expression}

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return _format(evaluate(arguments["expression"]))
