"""Tools from typed functions: the declaration generated from a function's name, docstring and
type hints (strict when the schema allows it, msgspec's own schema otherwise), the decorator's
options, what a function cannot be, and the model's arguments converted to the function's types."""

from __future__ import annotations

import asyncio
import enum
import functools
from datetime import date
from typing import Annotated, Any, Literal, TypedDict

import msgspec
import pytest

import turnwire
from turnwire.errors import InputError, InvalidToolCallArgs
from turnwire.model.functions import ToolFunction, function_tools, with_function_tools
from turnwire.model.records import Thread, Tool
from turnwire.model.structured import strict_problems


class Place(msgspec.Struct):
    """A point on the map."""

    lat: float
    lon: float = 0.0


class Window(TypedDict):
    start: date
    days: int


class Opaque:
    """No JSON Schema for this one."""


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


def forecast(
    city: Annotated[str, "The city"],
    window: Window,
    days: Annotated[int, msgspec.Meta(ge=1, le=14, description="How many days")] = 3,
    unit: Literal["c", "f"] = "c",
    near: Place | None = None,
    tags: list[str] = [],  # noqa: B006 - a default the function never changes
    scale: Unit = Unit.CELSIUS,
    note: str | None = "none",
) -> str:
    """The forecast for a city.

    Days count from today.
    """
    return city


STRICT_FORECAST = {
    "type": "object",
    "properties": {
        "city": {"description": "The city", "type": "string"},
        "window": {"$ref": "#/$defs/Window"},
        "days": {
            "description": "How many days",
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": 14}, {"type": "null"}],
        },
        "unit": {"anyOf": [{"enum": ["c", "f"], "type": "string"}, {"type": "null"}]},
        "near": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        "scale": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["city", "window", "days", "unit", "near", "tags", "scale", "note"],
    "additionalProperties": False,
    "$defs": {
        "Place": {
            "title": "Place",
            "description": "A point on the map.",
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
            "additionalProperties": False,
        },
        "Unit": {"title": "Unit", "enum": ["c", "f"], "type": "string"},
        "Window": {
            "title": "Window",
            "type": "object",
            # msgspec lists a TypedDict's keys in sorted order
            "properties": {
                "days": {"type": "integer"},
                "start": {"type": "string", "format": "date"},
            },
            "required": ["days", "start"],
            "additionalProperties": False,
        },
    },
}


def test_a_function_is_declared_by_its_name_docstring_and_strict_type_hints():
    made = turnwire.tool(forecast)
    assert isinstance(made, ToolFunction) and made.strict_problem is None
    assert made.declaration == Tool(
        name="forecast",
        description="The forecast for a city.\n\nDays count from today.",
        parameters=STRICT_FORECAST,
    )
    # None: strict unless render.strict says otherwise (the stage decides; this qualifies)
    assert made.declaration.strict is None
    assert strict_problems(STRICT_FORECAST) == []


def test_a_parameter_with_a_default_takes_null_for_its_default():
    made = turnwire.tool(forecast)
    positional, keywords = made.arguments(
        {
            "city": "Oslo",
            "window": {"start": "2026-01-02", "days": 2},
            "days": None,
            "unit": None,
            "near": {"lat": 59.9, "lon": 10.7},
            "tags": None,
            "scale": "f",
            "note": None,
        }
    )
    assert positional == ()
    assert keywords == {
        "city": "Oslo",
        "window": {"start": date(2026, 1, 2), "days": 2},
        "days": 3,
        "unit": "c",
        "near": Place(lat=59.9, lon=10.7),
        "tags": [],
        "scale": Unit.FAHRENHEIT,
        # its type admits None: a null is None, not the default
        "note": None,
    }
    keywords["tags"].append("x")  # a mutable default is the function's own, copied per call
    assert (
        made.arguments({"city": "a", "window": {"start": "2026-01-02", "days": 1}})[1]["tags"] == []
    )


def test_a_value_the_conversion_refuses_names_the_field():
    made = turnwire.tool(forecast)
    with pytest.raises(InvalidToolCallArgs) as caught:
        made.arguments({"city": "Oslo", "window": {"start": "tomorrow", "days": 2}})
    assert caught.value.message == (
        "Tool arguments do not match the parameters of forecast: $.window.start: Invalid "
        "RFC3339 encoded date. Call it again with arguments that follow its schema."
    )
    with pytest.raises(InvalidToolCallArgs, match=r"\$\.days: Expected `int` <= 14"):
        made.arguments({"city": "Oslo", "window": {"start": "2026-01-02", "days": 2}, "days": 99})


def test_a_schema_with_no_strict_form_is_msgspecs_own_sent_loose():
    def lookup_order(
        order_id: int, fields: dict[str, bool] | None = None, where: tuple[int, int] = (0, 0)
    ) -> dict[str, Any]:
        """Look an order up."""
        return {}

    made = ToolFunction(lookup_order)
    assert made.strict_problem == (
        "$.properties.fields.anyOf[0]: a mapping with free keys (dict[str, ...]) has no strict "
        "form; use a Struct"
    )
    assert msgspec.json.decode(msgspec.json.encode(made.declaration), type=Tool) == Tool(
        name="lookup_order",
        description="Look an order up.",
        parameters={
            "type": "object",
            "properties": {
                "order_id": {"type": "integer"},
                "fields": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"type": "boolean"}},
                        {"type": "null"},
                    ],
                    "default": None,
                },
                "where": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                    "items": False,
                    "minItems": 2,
                    "maxItems": 2,
                    "default": [0, 0],
                },
            },
            "required": ["order_id"],
            "additionalProperties": False,
        },
        strict=False,  # no strict form: never strict, whatever render.strict says
    )
    # absent arguments take their defaults
    assert made.arguments({"order_id": 7}) == ((), {"order_id": 7, "fields": None, "where": (0, 0)})
    with pytest.raises(TypeError, match=r"tool lookup_order: strict=True, but .*free keys"):
        turnwire.tool(lookup_order, strict=True)


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        (Any, "$.properties.x: a schema needs a `type` under strict"),
        (list[Any], "$.properties.x: an array needs `items` under strict"),
        (list[dict[str, Any]], "$.properties.x.items: a mapping with free keys"),
        (tuple[int, str], "$.properties.x: a tuple (prefixItems) has no strict form"),
    ],
)
def test_what_has_no_strict_form_is_named(annotation, problem):
    def f(x):  # type: ignore[no-untyped-def]
        return x

    f.__annotations__ = {"x": annotation}
    made = ToolFunction(f)
    assert made.strict_problem is not None and made.strict_problem.startswith(problem)
    assert made.declaration.strict is False
    assert made.declaration.parameters is not None
    assert made.declaration.parameters["required"] == ["x"]


def test_validation_keywords_strict_mode_lacks_are_left_to_the_conversion():
    def tag(names: Annotated[set[str], msgspec.Meta(max_length=2)]) -> None: ...

    made = turnwire.tool(tag)
    # msgspec says uniqueItems and maxItems: strict mode drops the first, keeps the second
    assert made.strict_problem is None
    assert made.declaration.parameters is not None
    assert made.declaration.parameters["properties"]["names"] == {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 2,
    }
    assert made.arguments({"names": ["a", "a"]}) == ((), {"names": {"a"}})


def test_strict_false_sends_the_loose_schema_and_the_options_win():
    @turnwire.tool(name="weather-now", description="Now.", strict=False)
    def get_weather(city: str, unit: str = "c") -> str:
        """Ignored: the description is given."""
        return city + unit

    assert get_weather.declaration == Tool(
        name="weather-now",
        description="Now.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "default": "c"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        strict=False,
    )
    assert get_weather.name == "weather-now"
    strict = turnwire.tool(get_weather.function, strict=True)
    assert strict.declaration.strict is True
    assert strict.declaration.parameters["required"] == ["city", "unit"]


def test_the_tool_is_still_the_function():
    @turnwire.tool
    def add(a: int, /, b: int = 1) -> int:
        return a + b

    @turnwire.tool
    async def later(x: int) -> int:
        return x * 2

    assert add(2, b=3) == 5 and add.__name__ == "add" and add.__wrapped__ is add.function
    assert asyncio.run(later(4)) == 8
    assert add.declaration.description == ""
    # a positional-only parameter is passed by position
    assert add.arguments({"a": 1, "b": None}) == ((1,), {"b": 1})
    assert repr(add).startswith("ToolFunction('add', <function ")


def test_a_function_without_a_schema_or_a_name_fails_at_once():
    def star(*names: str) -> None: ...

    def stars(**options: str) -> None: ...

    def opaque(value: Opaque) -> None: ...

    def unresolved(value: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match=r"tool star: \*names has no JSON Schema"):
        turnwire.tool(star)
    with pytest.raises(TypeError, match=r"tool stars: \*\*options has no JSON Schema"):
        turnwire.tool(stars)
    with pytest.raises(TypeError, match="tool opaque: its parameters have no JSON Schema"):
        turnwire.tool(opaque)
    with pytest.raises(TypeError, match="tool unresolved: an annotation cannot be resolved"):
        turnwire.tool(unresolved)
    with pytest.raises(ValueError, match=r"tool name '<lambda>'.*@turnwire.tool\(name=\.\.\.\)"):
        turnwire.tool(lambda: None)
    assert turnwire.tool(name="echo")(lambda: None).name == "echo"
    with pytest.raises(ValueError, match="tool name 'two words'"):
        turnwire.tool(star, name="two words")
    with pytest.raises(TypeError, match="a tool is a function, not int"):
        ToolFunction(3)  # type: ignore[arg-type]


def test_partials_bound_methods_and_callable_objects_are_tools():
    class Shop:
        def price(self, item: str) -> int:
            """The price of an item."""
            return len(item)

    def scaled(factor: int, value: int) -> int:
        """Scale a value."""
        return factor * value

    method = ToolFunction(Shop().price)
    assert (method.name, method.declaration.description) == ("price", "The price of an item.")
    assert list(method.declaration.parameters["properties"]) == ["item"]
    partial = ToolFunction(functools.partial(scaled, 3))
    assert (partial.name, partial.declaration.description) == ("scaled", "Scale a value.")
    assert list(partial.declaration.parameters["properties"]) == ["value"]
    assert partial(value=2) == 6


def test_tools_given_twice_or_clashing_with_the_thread_are_errors():
    def get_weather(city: str) -> str:
        return city

    made = turnwire.tool(get_weather)
    assert function_tools([made, made]) == {"get_weather": made}
    with pytest.raises(InputError, match="two functions are named 'get_weather'"):
        function_tools([made, get_weather])
    with pytest.raises(TypeError, match="tools= takes functions, not a Tool record"):
        function_tools([Tool(name="x")])
    thread = Thread(tools=(Tool(name="other"), Tool(name="get_weather")))
    with pytest.raises(InputError) as caught:
        with_function_tools(thread, [made])
    assert caught.value.message.startswith(
        "$.tools[1]: the thread declares a tool named 'get_weather', and tools= gives a "
        "function of that name too"
    )
    assert with_function_tools(Thread(), []) == Thread()
    assert with_function_tools(Thread(tools=(Tool(name="other"),)), [made]).tools == (
        Tool(name="other"),
        made.declaration,
    )
