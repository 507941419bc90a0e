"""A small chat memory with a two-part answer, for the second hop's tests.

The question names Jonas and his job; the answer is in another turn, which names his city
(Tallinn) and not him. Tallinn recurs in other turns, as a city does in real chat memory,
and other cities' food turns compete with the answer on meaning alone.
"""

from __future__ import annotations

QUESTION = (
    "What dish am I keen to taste on my trip to see Jonas, "
    "the relative now working for a young solar energy firm?"
)
FIRST = "cousin.md"
SECOND = "food.md"
COVERED = "cousin Jonas moved Tallinn job solar energy startup"  # every word in the first turn

_THINGS = ("office", "weather", "tram", "harbour", "museum", "library")
_STATES = ("busy", "quiet", "cold", "closed")
_CITIES = ("Lisbon", "Kyoto", "Porto", "Vienna", "Seville", "Oslo", "Naples", "Montreal", "Riga", "Bergen")
_FOODS = ("sardines", "ramen", "francesinha", "sachertorte", "gazpacho", "waffles", "pizza", "bagels")


def turns() -> dict[str, str]:
    """Document name -> text: the two evidence turns, 24 other turns naming Tallinn, 16
    food turns about other cities and 300 short reminders."""
    out = {
        FIRST: "My cousin Jonas just moved to Tallinn for a job at a solar energy startup.",
        SECOND: "When I visit Tallinn in the spring I really want to try the schnitzel everyone talks about.",
    }
    for i in range(24):
        out[f"tallinn-{i:02d}.md"] = f"The {_THINGS[i % 6]} in Tallinn was {_STATES[i % 4]} on day {i}."
    for i in range(16):
        out[f"trip-{i:02d}.md"] = (
            f"When I go to {_CITIES[i % 10]} I would love to eat the {_FOODS[i % 8]} there, number {i}."
        )
    for i in range(300):
        out[f"reminder-{i:03d}.md"] = f"Reminder {i}: water the plants and check the mail."
    return out
