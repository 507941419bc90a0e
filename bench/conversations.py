"""Generate the conversation eval set: long multi-session chats, questions with evidence turns.

Deterministic (a fixed seed): `python bench/conversations.py` rewrites
`bench/retrieval_data/conversations/{atoms,queries}.jsonl`, and the benchmark reads those.

Every turn is one document (`session-012-turn-07`) whose text starts with its session's
date, as a chat store saves them: 5,550 turns in 120 sessions a week apart, 528 questions.
Facts the user states are spread over the sessions; each fact gets one question, of one type:

- `lexical`: the question reuses the evidence's own words;
- `inflection`: the same words in another form (`beds` for `bed`, `adopting` for `adopted`);
- `paraphrase`: other words for most of it (`four-legged family member` for `dog`), two of
  the fact's details named as they are;
- `open-domain`: a detail named by what one knows about it, not by its name (`Portugal` for
  Lisbon, `sled dog` for husky, `the fiddle` for violin);
- `temporal`: when something happened, or what happened in a given month (the date is in the
  turn's text only);
- `multi-hop`: two turns are evidence, linked by a name the question does not say, in words
  that are not the first turn's (which relative works in Lisbon comes from one turn, what I
  want to eat there from the other).

What makes it hard: the names, places and breeds come from small pools, so every one of
them appears in many turns about other events; two later turns come back to each fact's
things in the same words without its answer; four turns quote someone else's version of it
(two with another answer, two with another detail); each fact gets an assistant reply on
the same topic; chit-chat turns reuse the facts' vocabulary. Every question has one answer:
no other fact of its template has the details it names.
"""

from __future__ import annotations

import datetime
import json
import random
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["OUT", "generate", "main"]

OUT = Path(__file__).resolve().parent / "retrieval_data" / "conversations"
SEED = 16_2026
SESSIONS = 120
TURNS_PER_SESSION = 28
START = datetime.date(2023, 1, 9)

PEOPLE = ("Clara", "Marco", "Priya", "Tom", "Aisha", "Jonas", "Mei", "Diego", "Hannah", "Omar", "Lena", "Sam")
PLACES = ("Riverside", "Oakwood", "Maple Hill", "Harbor", "Northgate", "Elm Park", "Westbrook", "Cedar Lane")
BREEDS = ("beagle", "collie", "terrier", "spaniel", "poodle", "husky", "dachshund", "retriever")
PETS = ("Biscuit", "Pepper", "Mochi", "Scout", "Juniper", "Waffles", "Ziggy", "Olive", "Bean", "Rocket")
DISHES = ("lemon tart", "carrot cake", "apple pie", "banana bread", "cheesecake", "brownies", "plum cake")
INGREDIENTS = ("cardamom", "brown butter", "orange zest", "dark chocolate", "walnuts", "ginger")
DISTANCES = ("5k", "10k", "half marathon")
COLORS = ("blue", "silver", "red", "green", "white", "black")
CARS = ("hatchback", "station wagon", "sedan", "pickup truck", "minivan")
BOOKS = (
    "The Salt Road", "Night Orchard", "A Map of Glass", "The Quiet Tide", "Iron Meadow",
    "Paper Lanterns", "The Ninth Winter", "Small Gods of Rain", "The Copper Bell",
)  # fmt: skip
TEAMS = ("platform", "payments", "mobile", "data", "security", "growth")
PLANTS = ("tomato", "pepper", "lettuce", "basil", "zucchini", "strawberry", "bean", "kale")
CITIES = ("Lisbon", "Porto", "Kyoto", "Montreal", "Vienna", "Seville", "Oslo", "Tallinn", "Naples")
FESTIVALS = ("jazz", "film", "lantern", "food", "folk music", "light")
INSTRUMENTS = ("cello", "ukulele", "violin", "keyboard", "banjo", "trumpet")
INDUSTRIES = ("robotics", "fintech", "biotech", "gaming", "solar energy", "logistics")
FOODS = ("grilled sardines", "ramen", "poutine", "schnitzel", "tapas", "pastel de nata", "smoked salmon")
BRANDS = ("Northpaw", "Kibblewise", "TrueTail", "Fjord Feast", "Meadowbowl")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MINUTES = tuple(str(m) for m in range(24, 130, 3))
PRICES = tuple(str(p) for p in range(4, 30))
COUNTS = tuple(str(n) for n in range(3, 25))
HOURS = tuple(str(h) for h in range(2, 9))
AMOUNTS = tuple(str(a) for a in range(50, 400, 25))
CHAPTERS = tuple(str(c) for c in range(3, 30))
YEARS = tuple(str(y) for y in range(2, 30))
RELATIVES = ("sister", "brother", "aunt", "uncle", "cousin", "godmother")

# What an open-domain question says instead of a slot's value: knowledge about it that the
# evidence does not spell out (Lisbon is in Portugal, a husky is a sled dog).
DERIVED: dict[str, tuple[str, dict[str, str]]] = {
    "dogtype": ("breed", {
        "beagle": "scent hound", "collie": "sheepdog", "terrier": "ratting dog",
        "spaniel": "floppy-eared gun dog", "poodle": "curly-coated dog", "husky": "sled dog",
        "dachshund": "sausage dog", "retriever": "Labrador-type dog",
    }),
    "flavour": ("ingredient", {
        "cardamom": "an Indian spice", "brown butter": "nutty browned dairy", "orange zest": "citrus peel",
        "dark chocolate": "bitter cocoa", "walnuts": "crunchy nuts", "ginger": "a hot root spice",
    }),
    "km": ("distance", {"5k": "five kilometres", "10k": "ten kilometres", "half marathon": "21 kilometres"}),
    "cardesc": ("car", {
        "hatchback": "compact with a rear lift door", "station wagon": "estate car", "sedan": "saloon",
        "pickup truck": "ute with an open bed", "minivan": "people carrier",
    }),
    "country": ("city", {
        "Lisbon": "Portugal", "Porto": "Portugal", "Kyoto": "Japan", "Montreal": "Canada",
        "Vienna": "Austria",
        "Seville": "Spain", "Oslo": "Norway", "Tallinn": "Estonia", "Naples": "Italy",
    }),
    "plantdesc": ("plant", {
        "tomato": "ketchup fruit", "pepper": "capsicum", "lettuce": "salad leaf", "basil": "pesto herb",
        "zucchini": "courgette", "strawberry": "summer berry", "bean": "legume", "kale": "leafy cabbage",
    }),
    "instdesc": ("instrument", {
        "cello": "the big bowed string instrument", "ukulele": "the little Hawaiian four-string",
        "violin": "the fiddle", "keyboard": "the electric piano", "banjo": "the bluegrass five-string",
        "trumpet": "the brass horn",
    }),
}  # fmt: skip

# Events the user reports. Each has the evidence turn and one question per type; the
# inflection question uses other forms of the evidence's words, the paraphrase question
# other words altogether, and the temporal ones ask when (or, with `month`, what).
EVENTS: tuple[dict[str, Any], ...] = (
    {
        "slots": {"breed": BREEDS, "place": PLACES, "pet": PETS},
        "say": "I finally adopted a {breed} named {pet} from the {place} animal shelter, and she already "
        "claimed the old dog bed in the hallway.",
        "lexical": "What is the name of the {breed} I adopted from the {place} animal shelter?",
        "inflection": "What name did I give the {breed} when adopting from the animal shelters in {place}?",
        "paraphrase": "What do we call the new four-legged {breed} family member who came from {place}?",
        "open": "What is the name of the {dogtype} I got from {place}?",
        "when": "When did I adopt a {breed} from the {place} shelter?",
        "month": "Which dog did I adopt in {month}?",
        "follow": (
            "The {place} animal shelter asked me to foster another {breed} for a few weeks.",
            "I saw a {breed} at the {place} dog park that looked just like mine.",
        ),
    },
    {
        "slots": {"dish": DISHES, "person": PEOPLE, "ingredient": INGREDIENTS},
        "say": "I baked a {dish} with {ingredient} for {person}'s birthday party, using my grandmother's "
        "recipe.",
        "lexical": "What did I bake with {ingredient} for {person}'s birthday party?",
        "inflection": "Which bakes was I baking for the birthdays of {person}, the ones with {ingredient}?",
        "paraphrase": "Which treat tasting of {ingredient} did I make from an old family recipe when "
        "{person} turned a year older?",
        "open": "What did I make for {person}'s big day that tasted of {flavour}?",
        "when": "When did I bake a {dish} for {person}'s birthday?",
        "month": "What did I bake for a birthday in {month}?",
        "follow": (
            "{person} asked me for the {ingredient} recipe again; birthday season is coming.",
            "I bought more {ingredient} for {person}'s party next year.",
        ),
    },
    {
        "slots": {"place": PLACES, "distance": DISTANCES, "person": PEOPLE, "minutes": MINUTES},
        "say": "I ran the {place} {distance} race this morning in {minutes} minutes, a new personal best, "
        "and {person} was cheering at the finish.",
        "lexical": "What was my time in the {place} {distance} race, my personal best, with {person} "
        "cheering?",
        "inflection": "How fast was I running in the {distance} races at {place} while {person} cheered?",
        "paraphrase": "How quickly did I cross the line in {place}, my fastest ever, while {person} shouted "
        "my name?",
        "open": "What was my finishing time over {km} at {place} when {person} came to watch?",
        "when": "When did I set a personal best in the {place} {distance} with {person} cheering?",
        "month": "What race did I run in {month}?",
        "follow": (
            "{person} wants to run the {place} {distance} race with me next year.",
            "Signed up for the {place} {distance} race again, hoping {person} can come and cheer.",
        ),
    },
    {
        "slots": {"color": COLORS, "car": CARS, "place": PLACES, "price": PRICES},
        "say": "We bought a used {color} {car} from a dealer in {place} for {price} thousand dollars.",
        "lexical": "How much did we pay for the used {color} {car} from the dealer in {place}?",
        "inflection": "What were we paying for the {color} {car}s at the dealers of {place}?",
        "paraphrase": "What did the pre-owned {color} motor cost us in {place}?",
        "open": "How much was the second-hand {color} {cardesc} we got in {place}?",
        "when": "When did we buy the used {color} {car} in {place}?",
        "month": "What vehicle did we buy in {month}?",
        "follow": (
            "The {color} {car} needs new tyres; the dealer in {place} quoted a lot.",
            "Drove the {color} {car} to {place} to ask the dealer about the warranty.",
        ),
    },
    {
        "slots": {"book": BOOKS, "place": PLACES, "person": PEOPLE},
        "say": "Our book club met at the {place} library and discussed {book}; {person} loved it but I "
        "argued the ending felt rushed.",
        "lexical": "Who loved {book} when our book club met at the {place} library?",
        "inflection": "Who was loving {book} when the book clubs were meeting at {place} libraries?",
        "paraphrase": "Which friend was a fan of {book} when the reading circle got together in {place}?",
        "open": "Who adored {book} when the reading circle gathered among the shelves in {place}?",
        "when": "When did our book club discuss {book} at the {place} library?",
        "month": "Which novel did the book club discuss in {month}?",
        "follow": (
            "The {place} library has a second copy of {book} for our book club.",
            "I lent my copy of {book} to a friend from the {place} library group.",
        ),
    },
    {
        "slots": {"person": PEOPLE, "team": TEAMS, "city": CITIES},
        "say": "My manager {person} approved my transfer to the {team} team in the {city} office, starting "
        "next quarter.",
        "lexical": "Which manager approved my transfer to the {team} team in the {city} office?",
        "inflection": "Who was approving the transfers of mine onto the {team} teams at {city} offices?",
        "paraphrase": "Which boss signed off on me moving over to the {team} people in {city}?",
        "open": "Who said yes to my move to the {team} team in {country}?",
        "when": "When was my transfer to the {team} team in {city} approved?",
        "month": "Which team did I get a transfer to in {month}?",
        "follow": (
            "First week with the {team} team in the {city} office; lots of onboarding.",
            "The {team} team in {city} is hiring again; a transfer there looks easy now.",
        ),
    },
    {
        "slots": {"count": COUNTS, "plant": PLANTS, "place": PLACES},
        "say": "I planted {count} {plant} seedlings in the raised beds along the fence at the {place} "
        "community garden.",
        "lexical": "How many {plant} seedlings did I plant in the raised beds at the {place} community "
        "garden?",
        "inflection": "How many {plant} seedling did I get planting in the raised bed at {place} gardens?",
        "paraphrase": "How many young {plant} sprouts did I put in the soil by the fence in {place}?",
        "open": "How many {plantdesc} seedlings did I put in at {place}?",
        "when": "When did I plant {plant} seedlings at the {place} garden?",
        "month": "What did I plant at the community garden in {month}?",
        "follow": (
            "The {plant} seedlings at the {place} community garden need water after the heatwave.",
            "Slugs got into the raised beds at {place}; a few {plant} plants are gone.",
        ),
    },
    {
        "slots": {"city": CITIES, "festival": FESTIVALS, "person": PEOPLE},
        "say": "{person} and I booked flights to {city} for the {festival} festival, we fly out in six "
        "weeks.",
        "lexical": "Which festival did {person} and I book flights to {city} for?",
        "inflection": "What festivals are {person} and I booking the flight to {city} for?",
        "paraphrase": "What event are {person} and I going to {city} for?",
        "open": "Which festival are {person} and I going to in {country}?",
        "when": "When did {person} and I book the trip to {city}?",
        "month": "Where did I book flights to in {month}?",
        "follow": (
            "{person} found a cheap hotel in {city} close to the old town.",
            "{person} and I are learning a few phrases before the trip to {city}.",
        ),
    },
    {
        "slots": {"instrument": INSTRUMENTS, "place": PLACES, "person": PEOPLE},
        "say": "I ordered a {instrument} from a shop in {place} and started taking weekly lessons from a "
        "teacher named {person}.",
        "lexical": "Who is the teacher giving me weekly lessons on the {instrument} I ordered in {place}?",
        "inflection": "Who was teaching the {instrument} lesson I take every week after ordering one from "
        "{place}?",
        "paraphrase": "Who instructs me every seven days on the {instrument} from {place}?",
        "open": "Who teaches me {instdesc} every week, the one I got in {place}?",
        "when": "When did I start {instrument} lessons after ordering one in {place}?",
        "month": "Which instrument did I start learning in {month}?",
        "follow": (
            "The {instrument} from the {place} shop needed new strings already.",
            "I practised the {instrument} for an hour; the {place} shop sells good sheet music.",
        ),
    },
    {
        "slots": {"place": PLACES, "hours": HOURS, "person": PEOPLE},
        "say": "I volunteered at the {place} food bank with {person}, sorting donated cans for {hours} "
        "hours.",
        "lexical": "How many hours did I volunteer at the {place} food bank with {person}?",
        "inflection": "How long was I volunteering with {person} at the food banks in {place}, sorting can "
        "donations?",
        "paraphrase": "How much time did {person} and I give to the pantry for the hungry in {place}?",
        "open": "How long did {person} and I spend on charity work for people who cannot afford groceries in "
        "{place}?",
        "when": "When did I volunteer with {person} at the {place} food bank?",
        "month": "Where did I volunteer in {month}?",
        "follow": (
            "{person} signed us up for another shift at the {place} food bank.",
            "The {place} food bank thanked {person} and me in their newsletter.",
        ),
    },
    {
        "slots": {"person": PEOPLE, "place": PLACES, "amount": AMOUNTS},
        "say": "Our landlord {person} raised the rent by {amount} dollars, so we started looking at "
        "apartments in {place}.",
        "lexical": "By how much did our landlord {person} raise the rent before we looked at apartments in "
        "{place}?",
        "inflection": "How much were rents raising under landlord {person}, when looking for an apartment in "
        "{place}?",
        "paraphrase": "What was the monthly increase the property owner {person} charged us, making us hunt "
        "for flats in {place}?",
        "open": "How much more per month does {person} want from us, so that we now look for a new home in "
        "{place}?",
        "when": "When did landlord {person} raise the rent so we looked at apartments in {place}?",
        "month": "Which neighbourhood did we look at apartments in during {month}?",
        "follow": (
            "Landlord {person} still hasn't fixed the leaking sink.",
            "We visited two apartments in {place}, both too small.",
        ),
    },
    {
        "slots": {"person": PEOPLE, "place": PLACES, "day": WEEKDAYS},
        "say": "The dentist at the {place} clinic said I need a crown; the appointment is on {day} and "
        "{person} will drive me.",
        "lexical": "Who will drive me to the crown appointment at the {place} clinic on {day}?",
        "inflection": "Who is driving me to appointments for the crowns at the {place} clinics on {day}s?",
        "paraphrase": "Which friend is giving me a lift to the tooth procedure in {place} this {day}?",
        "open": "Who takes me to get my molar capped in {place} on {day}?",
        "when": "When did the {place} dentist tell me I need a crown on {day}?",
        "month": "What did the dentist tell me in {month}?",
        "follow": (
            "The {place} dental clinic called to confirm the appointment on {day}.",
            "My tooth still hurts; {day} at the {place} clinic cannot come soon enough.",
        ),
    },
)

# Two turns per fact: the question bridges them (it names a detail of the first turn and
# asks for a detail of the second, which names the link differently).
HOPS: tuple[dict[str, Any], ...] = (
    {
        "slots": {"person": PEOPLE, "city": CITIES, "industry": INDUSTRIES, "food": FOODS},
        "first": "My cousin {person} just moved to {city} for a job at a {industry} startup.",
        "second": "When I visit {city} in the spring I really want to try the {food} everyone talks about.",
        "question": "What dish am I keen to taste on my trip to see {person}, the relative now working for a "
        "young {industry} firm?",
    },
    {
        "slots": {"pet": PETS, "place": PLACES, "brand": BRANDS},
        "first": "The vet at {place} found out that {pet} is allergic to chicken.",
        "second": "I switched {pet} to a salmon kibble from {brand}, and the itching stopped.",
        "question": "Which pet food label cured {pet}'s poultry intolerance diagnosed in {place}?",
    },
    {
        "slots": {"person": PEOPLE, "place": PLACES, "book": BOOKS, "chapter": CHAPTERS},
        "first": "My coworker {person} from the {place} office lent me a copy of {book} and said the twist "
        "would surprise me.",
        "second": "Finished {book} on the train; the reveal in chapter {chapter} was wild.",
        "question": "Which chapter held the big surprise in the story {person}, a colleague at {place}, "
        "loaned me?",
    },
    {
        "slots": {"person": PEOPLE, "instrument": INSTRUMENTS, "years": YEARS, "place": PLACES},
        "first": "My neighbour {person} has played the {instrument} in a community orchestra for {years} "
        "years.",
        "second": "{person} invited me to the orchestra concert at the {place} town hall next Friday.",
        "question": "Where will the person next door, {years} years on the {instrument}, perform?",
    },
    {
        "slots": {"relative": RELATIVES, "person": PEOPLE, "place": PLACES, "day": WEEKDAYS},
        "first": "My {relative} {person} started a new job as a nurse at the hospital in {place}.",
        "second": "{person}'s first night shift is on {day}, so I promised to cook dinner beforehand.",
        "question": "Which day does my {relative}, the new carer on the wards in {place}, start working "
        "overnight?",
    },
    {
        "slots": {"person": PEOPLE, "industry": INDUSTRIES, "city": CITIES, "food": FOODS},
        "first": "My old roommate {person} now runs a small {industry} company out of {city}.",
        "second": "{person} told me to order the {food} at her favourite restaurant.",
        "question": "What meal did the former flatmate who founded a {industry} business in {city} "
        "recommend?",
    },
    {
        "slots": {"breed": BREEDS, "pet": PETS, "place": PLACES, "count": COUNTS},
        "first": "Our {breed} {pet} has been limping since the long hike at {place}.",
        "second": "The vet put {pet} on {count} days of strict rest, no walks at all.",
        "question": "How long must our {breed} stay still after hurting a leg on the {place} trail?",
    },
    {
        "slots": {"relative": RELATIVES, "person": PEOPLE, "place": PLACES, "color": COLORS, "car": CARS},
        "first": "My {relative} {person} works as a mechanic at a garage in {place}.",
        "second": "{person} fixed the brakes on our {color} {car} for free last weekend.",
        "question": "Which vehicle did my {relative} who fixes engines in {place} work on for nothing?",
    },
)

# The assistant's reply to a fact: on the same topic, in the same words, without its details.
EVENT_TOPICS = (
    "adopting a dog from a shelter", "baking for a birthday", "a new personal best in a race",
    "buying a used car", "the book club discussion", "a transfer to another team",
    "planting seedlings in raised beds", "booking flights for a festival", "taking music lessons",
    "volunteering at a food bank", "a rent increase and apartment hunting", "a dentist appointment",
)  # fmt: skip
HOP_TOPICS = (
    ("a cousin moving for a job", "visiting a new city"),
    ("a pet with a food allergy", "switching pet food"),
    ("a book a coworker lent you", "finishing a novel"),
    ("a neighbour in an orchestra", "a concert invitation"),
    ("a relative's new job", "a first night shift"),
    ("an old roommate's company", "a restaurant tip"),
    ("a limping dog", "a vet's advice"),
    ("a relative who is a mechanic", "a car repair"),
)
# Someone else's version of a fact: the same words with another answer (the first two), or
# with another detail (the last two).
NEAR_MISSES = (
    'user: {other} told me: "{text}"',
    "user: Funny, {other} says the very same happened to them: {text}",
    "user: {other} mentioned at lunch: {text}",
    'user: From {other}\'s message this morning: "{text}"',
)
ECHOES = (
    "That sounds wonderful! I'll remember what you said about {topic}.",
    "Good to know about {topic}. Let me know if you want me to remember anything else about it.",
    "Noted: {topic}. Want a reminder about it later?",
    "How exciting, {topic}! Is there anything you need help planning?",
)
CHATTER = (
    "user: Traffic near {place} was terrible again this morning.",
    "user: {person} called about the weekend, nothing decided yet.",
    "user: Can you suggest a quick dinner? I have {ingredient} and some rice.",
    "user: {pet} the neighbour's {breed} barked at the mail carrier for ten minutes.",
    "user: I walked past the {place} animal shelter; they are asking for blankets and dog beds.",
    "user: Any tips for running in the rain? I might try a {distance} next year.",
    "user: {person} recommended a garage in {place} for the car's brakes.",
    "user: I'm thinking about a bigger apartment, but rents in {place} are high.",
    "user: The book club wants to read something shorter after {book}.",
    "user: Remind me to water the {plant} plants tomorrow.",
    "user: {person} keeps talking about moving to {city} someday.",
    "user: My back hurts after sitting all day at work on the {team} roadmap.",
    "user: Should I buy a {instrument} or rent one first?",
    "user: The food bank in {place} posted that they need drivers.",
    "user: I had {food} for lunch, it was okay.",
    "user: {person} baked a {dish} for the office; it was gone in an hour.",
    "user: The dentist sent a reminder for a cleaning at the {place} clinic.",
    "user: Is it worth getting a dog bed with memory foam for an old {breed}?",
    "user: Our landlord fixed the heating at last.",
    "user: The {festival} festival in our town was crowded this year.",
)
REPLIES = (
    "assistant: Happy to help. A simple plan usually works best; want me to draft one?",
    "assistant: I'll keep that in mind for later.",
    "assistant: That makes sense. Would you like a reminder?",
    "assistant: Here are a few ideas: keep it simple, check the weather, and leave early.",
    "assistant: Sounds like a busy week. Anything I can take off your plate?",
    "assistant: Got it. I can look up options if you want.",
)
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
# The single-turn types in rotation: paraphrase and temporal twice as often as the others.
SINGLE_TYPES = ("lexical", "inflection", "paraphrase", "temporal", "open-domain", "paraphrase", "temporal")
PER_EVENT = 28  # facts per event template (a question each)
PER_HOP = 24


@dataclass
class Fact:
    kind: str  # question type
    question: str
    turns: list[str]  # the evidence turns' texts (without the date), first one first
    topics: list[str]  # what the assistant's reply to each turn is about
    gap: int = 0  # sessions between the two turns of a multi-hop fact
    event: int = -1  # the EVENTS template it came from
    fallback: str = ""  # a month question's "when" form, if its month is ambiguous
    follow: list[str] = field(default_factory=list)  # later turns on the same things, not evidence
    placed: list[str] = field(default_factory=list)  # document names, once placed


def _fill(
    rng: random.Random, slots: dict[str, tuple[str, ...]], seen: set[tuple[str, ...]]
) -> dict[str, str]:
    """Slot values not used together before by this template."""
    for _ in range(10_000):
        values = {name: rng.choice(pool) for name, pool in slots.items()}
        key = tuple(values.values())
        if key not in seen:
            seen.add(key)
            return values
    raise ValueError(f"no unused slot values left for {sorted(slots)}")


def _fields(template: str) -> tuple[str, ...]:
    """The slots a question names (its month aside)."""
    return tuple(sorted({f for _, f, _, _ in string.Formatter().parse(template) if f and f != "month"}))


def _derive(values: dict[str, str]) -> dict[str, str]:
    """The values with what an open-domain question says about them."""
    return values | {name: names[values[src]] for name, (src, names) in DERIVED.items() if src in values}


def _near_misses(rng: random.Random, event: dict[str, Any], values: dict[str, str]) -> list[str]:
    """Someone else's version of the fact, in the same words but for one changed detail."""
    answers = sorted(set(event["slots"]) - set(_fields(event["lexical"]))) or sorted(event["slots"])
    out = []
    for number, template in enumerate(NEAR_MISSES):
        slot = rng.choice(answers if number < 2 else sorted(event["slots"]))
        changed = values | {slot: rng.choice([v for v in event["slots"][slot] if v != values[slot]])}
        other = rng.choice([p for p in PEOPLE if p not in values.values()])
        out.append(template.format(other=other, text=event["say"].format(**changed)))
    return out


def _facts(rng: random.Random) -> list[Fact]:
    facts: list[Fact] = []
    asked: set[str] = set()
    for number, event in enumerate(EVENTS):
        seen: set[tuple[str, ...]] = set()
        # Every question must have one answer: the slots it names (and those of the `when`
        # fallback) pick out one fact of this template, asked or not.
        earlier: list[dict[str, str]] = []
        keys: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for index in range(PER_EVENT):
            kind = SINGLE_TYPES[(index + number) % len(SINGLE_TYPES)]
            key = "open" if kind == "open-domain" else kind
            template = event[key] if kind != "temporal" else event["month" if index % 2 else "when"]
            own = {_fields(template), _fields(event["when"])} - {()}
            while True:
                values = _fill(rng, event["slots"], seen)
                full = _derive(values)
                question = template.format(**full, month="{month}")
                clash = any(tuple(full[f] for f in fs) == vs for fs, vs in keys) or any(
                    all(e[f] == full[f] for f in fs) for e in earlier for fs in own
                )
                if not clash and (question not in asked or "{month}" in question):
                    break
            earlier.append(full)
            keys += [(fs, tuple(full[f] for f in fs)) for fs in own]
            asked.add(question)
            say = "user: " + event["say"].format(**values)
            facts.append(
                Fact(
                    kind,
                    question,
                    [say],
                    [EVENT_TOPICS[number]],
                    event=number,
                    fallback=event["when"].format(**values),
                    follow=["user: " + f.format(**values) for f in event["follow"]]
                    + _near_misses(rng, event, values),
                )
            )
    for hop, topics in zip(HOPS, HOP_TOPICS, strict=True):
        seen = set()
        for _ in range(PER_HOP):
            while True:
                values = _fill(rng, hop["slots"], seen)
                if hop["question"].format(**values) not in asked:
                    break
            asked.add(hop["question"].format(**values))
            turns = ["user: " + hop["first"].format(**values), "user: " + hop["second"].format(**values)]
            facts.append(
                Fact(
                    "multi-hop", hop["question"].format(**values), turns, list(topics), gap=rng.randint(1, 20)
                )
            )
    return facts


def _chatter(rng: random.Random) -> str:
    values = {
        "place": rng.choice(PLACES), "person": rng.choice(PEOPLE), "ingredient": rng.choice(INGREDIENTS),
        "pet": rng.choice(PETS), "breed": rng.choice(BREEDS), "distance": rng.choice(DISTANCES),
        "book": rng.choice(BOOKS), "plant": rng.choice(PLANTS), "city": rng.choice(CITIES),
        "team": rng.choice(TEAMS), "instrument": rng.choice(INSTRUMENTS), "food": rng.choice(FOODS),
        "dish": rng.choice(DISHES), "festival": rng.choice(FESTIVALS),
    }  # fmt: skip
    return rng.choice(CHATTER).format(**values)


def _date_label(day: datetime.date) -> str:
    return f"{day:%A}, {day.day} {MONTHS[day.month - 1]} {day.year}"


def generate(seed: int = SEED) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The atoms (one per turn) and the queries (with their type and evidence turns)."""
    rng = random.Random(seed)
    facts = _facts(rng)
    rng.shuffle(facts)
    # Each session gets an even share of the facts' turns; a multi-hop fact's second turn
    # goes `gap` sessions after its first.
    plan: list[list[tuple[Fact, int]]] = [[] for _ in range(SESSIONS)]
    extra: list[list[str]] = [[] for _ in range(SESSIONS)]
    for index, fact in enumerate(facts):
        session = index * SESSIONS // len(facts)
        if fact.kind == "multi-hop":
            session = min(session, SESSIONS - 1 - fact.gap)
            plan[session].append((fact, 0))
            plan[session + fact.gap].append((fact, 1))
        else:
            plan[session].append((fact, 0))
        for text in fact.follow:  # mostly later, in the same words, about something else
            later = session + rng.randint(1, 15)
            extra[later if later < SESSIONS else rng.randrange(SESSIONS)].append(text)
    atoms: list[dict[str, Any]] = []
    dates: dict[int, datetime.date] = {}
    for session, placed in enumerate(plan):
        day = START + datetime.timedelta(days=7 * session + rng.randint(0, 3))
        dates[session] = day
        turns: list[tuple[str, tuple[Fact, int] | None]] = []
        for _ in range(max(0, TURNS_PER_SESSION // 2 - len(placed) - len(extra[session]))):
            turns += [(_chatter(rng), None), (rng.choice(REPLIES), None)]
        for text in extra[session]:
            at = rng.randrange(0, len(turns) + 1, 2)
            turns[at:at] = [(text, None), (rng.choice(REPLIES), None)]
        for fact, part in placed:
            at = rng.randrange(0, len(turns) + 1, 2)
            echo = "assistant: " + rng.choice(ECHOES).format(topic=fact.topics[part])
            turns[at:at] = [(fact.turns[part], (fact, part)), (echo, None)]
        for number, (text, owner) in enumerate(turns):
            name = f"session-{session:03d}-turn-{number:02d}"
            atoms.append(
                {
                    "id": name,
                    "slot": "knowledge",
                    "name": name,
                    "text": f"[{_date_label(day)}] {text}",
                    "metadata": {"atom_type": "project-lore", "tags": ["conversation"]},
                }
            )
            if owner is not None:
                owner[0].placed.append(name)

    def month_of(fact: Fact) -> str:
        day = dates[int(fact.placed[0].split("-")[1])]
        return f"{MONTHS[day.month - 1]} {day.year}"

    months: dict[tuple[int, str], int] = {}
    for fact in facts:
        months[(fact.event, month_of(fact))] = months.get((fact.event, month_of(fact)), 0) + 1
    queries = []
    for number, fact in enumerate(sorted(facts, key=lambda f: f.placed[0]), 1):
        question = fact.question
        if "{month}" in question:  # unambiguous only if no other such event that month
            month = month_of(fact)
            question = question.format(month=month) if months[(fact.event, month)] == 1 else fact.fallback
        queries.append({"id": f"c{number:03d}", "query": question, "gold": fact.placed, "type": fact.kind})
    return atoms, queries


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> int:
    atoms, queries = generate()
    OUT.mkdir(parents=True, exist_ok=True)
    write_jsonl(OUT / "atoms.jsonl", atoms)
    write_jsonl(OUT / "queries.jsonl", queries)
    kinds: dict[str, int] = {}
    for q in queries:
        kinds[q["type"]] = kinds.get(q["type"], 0) + 1
    print(f"{len(atoms)} turns, {len(queries)} questions: {kinds}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
