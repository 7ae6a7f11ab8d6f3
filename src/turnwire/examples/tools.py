"""Example tools: deterministic, offline stand-ins for real services."""

from __future__ import annotations

__all__ = ["get_weather"]

_WEATHER = {"paris": (21, "sunny"), "florence": (40, "hot and clear"), "oslo": (-3, "snow")}


def get_weather(city: str = "", location: str = "") -> str:
    """Current weather for a city (a fixed table; no network)."""
    name = (city or location).split(",")[0].strip()
    degrees, sky = _WEATHER.get(name.lower(), (18, "cloudy"))
    return f"{degrees}C and {sky} in {name or 'an unnamed city'}"
