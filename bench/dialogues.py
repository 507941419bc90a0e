"""Generate the dialogue eval set: two friends talking over months, questions about each of them.

Deterministic (a fixed seed): `python bench/dialogues.py` rewrites
`bench/retrieval_data/dialogues/{atoms,queries,unanswerable,nonsense}.jsonl`.

It is built to be hard the way long chat memory is hard, and unlike the conversation set
(bench/conversations.py), where one user tells an assistant about their life:

- six pairs of friends, each pair one long chat (20 sessions, a fortnight apart); every turn
  is one document whose text starts with its session's date and its speaker
  (`[Saturday, 14 January 2023] Maya: ...`); the questions are in the third person and name
  the person they are about, and the friend often talks about the same things;
- `multi-hop` questions gather: "What outdoor activities has Maya done?" needs the three
  turns, months apart, in which she went kayaking, hiking and climbing, and none of them
  says "outdoor"; the friend does other things of the same kind;
- `open-domain` questions need an inference the evidence does not spell out: "Is Maya a
  parent?" is answered by a turn about taking the kids to the aquarium;
- `temporal` questions ask when: the turn says "yesterday" or "last weekend", and only its
  header holds the date; the friend asks about the same event in a later session;
- `single-hop` questions ask for one stated detail in other words than the turn's;
- chit-chat fills every session, much of it in the facts' vocabulary.

`unanswerable.jsonl` asks about these people what the chats never say (some of it close to
what they do say: a cat's name where only an aunt's cats are mentioned); `nonsense.jsonl` is
gibberish, stop words and word salad. With `queries.jsonl` they are the "nothing found"
probes of bench/_abstention.py.
"""

from __future__ import annotations

import datetime
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["OUT", "generate", "main"]

OUT = Path(__file__).resolve().parent / "retrieval_data" / "dialogues"
SEED = 34_2026
SESSIONS = 20
TURNS_PER_SESSION = 44
PAIRS = (
    ("Maya", "Leo"),
    ("Nadia", "Felix"),
    ("Ruth", "Kenji"),
    ("Ines", "Owen"),
    ("Tara", "Hugo"),
    ("Zoe", "Amir"),
)
LAKES = ("Lake Arden", "Miller Lake", "Blue Pond", "Lake Carrow")
PARKS = ("Pine Ridge", "Eagle Crest", "Red Rock Park", "Hollow Hills")
CITIES = ("Lisbon", "Denver", "Glasgow", "Osaka", "Halifax", "Krakow", "Perth", "Nantes")
KIDS = ("Ella", "Noah", "Lily", "Max", "Ava", "Finn", "Ruby", "Theo")
BREEDS = ("greyhound", "corgi", "border collie", "whippet", "labrador", "shiba inu")
DOGS = ("Pip", "Bruno", "Luna", "Biscuit", "Nova", "Otis", "Hazel", "Rolo")
JOBS = (
    ("physiotherapist", "the sports clinic"),
    ("data analyst", "a shipping company"),
    ("sous chef", "a seafood restaurant"),
    ("librarian", "the city archive"),
    ("electrician", "a solar installer"),
    ("art teacher", "a primary school"),
    ("paramedic", "the county ambulance service"),
    ("UX designer", "a travel startup"),
)
COLOURS = ("red", "grey", "white", "dark green", "navy")
CARS = ("hatchback", "estate car", "pickup truck", "electric SUV")
BOOKS = ("The Lantern Field", "Winter Salt", "A House of Tides", "The Glass Orchard", "Slow Rivers")
COURSES = ("astronomy", "bookkeeping", "first aid", "furniture restoration", "beekeeping", "sign language")
RACES = ("Harbour 10k", "Riverside half marathon", "Hill Trail 15k", "City Night 5k")
BANDS = ("The Paper Kites", "Velvet Harbour", "Moonlit Static", "The Amber Lines")

# Things a person does, by kind. Each says what happened without naming its kind.
ACTIVITIES: dict[str, dict[str, str]] = {
    "outdoor": {
        "kayaking": "Took the kayak out on {lake} this morning and paddled all the way to the far shore.",
        "hiking": "We did the ridge trail at {park} on Saturday, eleven miles up and down, legs are done.",
        "camping": "Two nights in a tent by {lake}, cooked everything over the fire and saw a fox.",
        "climbing": "Finally got up the granite wall at {park} without resting on the rope.",
        "cycling": "Rode sixty kilometres along the coast road yesterday, headwind the whole way back.",
        "surfing": "Caught my first proper wave at the point break, stood up for five whole seconds!",
    },
    "creative": {
        "painting": "I finished a watercolour of the old mill, the first one I'm actually proud of.",
        "pottery": "Threw three bowls on the wheel at my ceramics class and one survived the kiln.",
        "knitting": "Knitted a striped scarf for my nephew, it took me most of the month.",
        "photography": "Was out at dawn with my new camera shooting the street market stalls.",
        "poetry": "Wrote a poem about my grandmother's garden and read it out at an open mic night.",
        "woodworking": "Built a little bookshelf in the garage and sanded every board by hand.",
    },
    "music": {
        "guitar": "Learned the fingerpicking pattern for that folk song on my acoustic guitar.",
        "piano": "Practised scales on the piano for an hour, my left hand is finally keeping up.",
        "drums": "Had my second drum lesson, the teacher says my timing on the hi-hat is decent.",
        "choir": "Our choir sang the harvest concert tonight and I had a short solo in the second piece.",
        "violin": "Dusted off my old violin and played through a whole sonata movement with the bow.",
        "saxophone": "Rented an alto sax and managed to play a blues scale without squeaking.",
    },
    "volunteering": {
        "shelter": "Spent the afternoon walking dogs at the rescue shelter again, fourteen of them.",
        "food bank": "Sorted tins at the food bank for four hours, they were so short of people.",
        "tutoring": "Helped two kids with their maths homework at the library after-school programme.",
        "cleanup": "Joined the beach cleanup crew this weekend, we filled twenty bags with plastic.",
        "hospice": "Read to a couple of the residents at the hospice, one told me about her sailing days.",
        "garden": "Planted leeks at the community garden that grows veg for the soup kitchen.",
    },
}
GATHER: dict[str, tuple[str, ...]] = {
    "outdoor": ("What outdoor activities has {p} done?", "Which outdoor pursuits has {p} taken part in?"),
    "creative": ("What creative hobbies does {p} have?", "What has {p} made or created as a pastime?"),
    "music": ("What kinds of music-making is {p} into?", "Which musical things does {p} do?"),
    "volunteering": (
        "Where has {p} volunteered?",
        "What kinds of unpaid help in the community does {p} give?",
    ),
}
ECHO = (
    "Oh wow, {what}? I'm jealous, I've been stuck indoors all week.",
    "You and your {what}, honestly! Send me pictures next time.",
    "I tried {what} once years ago and was terrible at it.",
)

# One stated detail each; the question asks for it in other words.
DETAILS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "We adopted a {breed} from the rescue and named her {dog}.",
        ("What breed of dog did {p} take in?", "What is the name of {p}'s new pet?"),
    ),
    ("I start as a {job} at {employer} on Monday, so nervous!", ("What new position is {p} starting?",)),
    ("My brother just moved to {city} for his new job.", ("Where did {p}'s sibling relocate?",)),
    ("Traded the old car in for a {colour} {car} yesterday.", ("What kind of vehicle did {p} get?",)),
    ("Just finished {book}, stayed up till two to read the ending.", ("Which novel kept {p} awake late?",)),
    ("Signed up for an evening course in {course} at the college.", ("What night class did {p} enrol in?",)),
    ("Twisted my ankle on the stairs at work, six weeks in a brace.", ("How did {p} get injured?",)),
    ("We're flying to {city} in the spring for my cousin's wedding.", ("Why is {p} travelling abroad?",)),
)

# Dated events: said with "yesterday" or "last weekend"; the question asks when.
EVENTS: tuple[tuple[str, str, str], ...] = (
    ("I ran the {race} yesterday, new best time!", "When did {p} run the {race}?", "How did the {race} go?"),
    (
        "Saw {band} live last weekend, they played for two hours.",
        "When did {p} see {band} in concert?",
        "Was {band} as good live as you hoped?",
    ),
    (
        "Had my interview at {employer} yesterday, I think it went well.",
        "When was {p}'s interview at {employer}?",
        "Any news from {employer} after the interview?",
    ),
    (
        "We moved into the new flat on Alder Street last weekend, boxes everywhere.",
        "When did {p} move to Alder Street?",
        "Have you unpacked at the Alder Street flat yet?",
    ),
    (
        "My niece {kid} turned six yesterday, we had a party in the park.",
        "When did {p}'s niece {kid} have a birthday?",
        "Did {kid} enjoy the birthday party?",
    ),
)

# Inferences: the evidence implies the answer without saying it.
TRAITS: tuple[tuple[str, str], ...] = (
    ("Took the kids to the aquarium, {kid} wouldn't leave the shark tank.", "Is {p} a parent?"),
    ("Helped set up the flowers for the Easter service at my church.", "Is {p} religious?"),
    (
        "Nothing beats waking up in the mountains with no phone signal at all.",
        "Would {p} rather holiday in a national park or a theme park?",
    ),
    (
        "Studying for my anatomy exam every night this month, so many bones.",
        "What profession might {p} be training for?",
    ),
    ("I can hear the waves from my bedroom window every single night.", "Does {p} live near the coast?"),
    ("Honestly a quiet night in with tea beats any party for me.", "Would {p} enjoy a crowded nightclub?"),
    ("I gave up flying this year to cut my carbon footprint.", "Would {p} support a climate campaign?"),
    (
        "Can't visit my aunt any more, her three cats leave me sneezing for days.",
        "Would {p} be able to adopt a kitten?",
    ),
    ("Made my own pasta from scratch again, the ravioli came out perfect.", "Is {p} a good cook?"),
)

UNANSWERABLE = (
    "What is {p}'s favourite film?",
    "Which university did {p} graduate from?",
    "What is the name of {p}'s cat?",
    "When did {p} go skydiving?",
    "How much does {p} earn a year?",
    "Which football team does {p} support?",
    "Which foreign language is {p} learning?",
    "What did {p} name the boat?",
    "Where did {p} go on honeymoon?",
    "What is {p}'s blood type?",
    "Which marathon in Asia did {p} finish?",
    "What is {p}'s favourite pizza topping?",
)

TOPICAL_SHARE = 0.08  # remarks in the facts' vocabulary: near misses, a few per topic and chat
# Chit-chat, put together from parts so that few turns repeat word for word.
OPENERS = (
    "",
    "",
    "",
    "Hey!",
    "Haha",
    "Honestly,",
    "Oh man,",
    "Morning!",
    "Ugh,",
    "So,",
    "Right,",
    "Aww,",
    "Ha, same.",
    "Wait,",
    "Okay so",
    "Hi hi!",
)
TOPICAL = (
    "I keep meaning to get outdoors more",
    "do you still make music at all",
    "we should go for a walk sometime",
    "my neighbour's dog barks all night",
    "I saw a poster for a pottery class near the station",
    "have you read anything good lately",
    "my brother never calls me back",
    "I'm thinking about getting a new car eventually",
    "the kids next door are learning the drums",
    "I might take a class in something this year",
    "it's been a while since I went to a concert",
    "I need new running shoes",
    "my cousin is visiting next week",
    "we watched a documentary about octopuses",
)
BODIES = (
    "how was your week",
    "work was exhausting again, so many meetings",
    "that's so great to hear",
    "tell me more, I want every detail",
    "I've been sleeping badly lately",
    "the weather has been awful here",
    "I really need a holiday",
    "did you see the news this morning",
    "coffee first, then I'm a person",
    "I made soup for the whole week on Sunday",
    "my boss wants the report by Friday",
    "did you ever finish that series we talked about",
    "the traffic this morning was unreal",
    "let's catch up properly at the weekend",
    "I'm so behind on emails",
    "that sounds lovely",
    "I'm sorry to hear that",
    "I went to the market and bought too much fruit",
    "my phone screen cracked again",
    "we're thinking about repainting the kitchen",
    "I'd love to try that some day",
    "what are you up to this weekend",
    "my mum called for an hour about the garden",
    "the train was cancelled again",
    "I finally cleaned out the garage",
    "the new cafe on the corner is great",
    "my back is sore from sitting all day",
    "I burned the toast twice this morning",
    "the landlord still hasn't fixed the heating",
    "I've been trying to drink less coffee",
    "my plants are all dying",
    "the gym was packed tonight",
    "I got a parking ticket, of course",
    "I can't believe it's already this month",
    "we ordered pizza and watched old films",
    "the office moved to the fourth floor",
)
CLOSERS = (
    "",
    "",
    "",
    "",
    "Anyway!",
    "How about you?",
    "lol",
    "Fingers crossed.",
    "Classic.",
    "Ha.",
    "What do you think?",
    "Sigh.",
    "Miss you!",
    "Talk soon.",
)


def _chatter(rng: random.Random) -> str:
    """One or two chit-chat remarks (rarely in the facts' vocabulary) with an optional opener and closer."""
    picked = [
        rng.choice(TOPICAL if rng.random() < TOPICAL_SHARE else BODIES) for _ in range(rng.choice((1, 1, 2)))
    ]
    remarks = [b[0].upper() + b[1:] for b in dict.fromkeys(picked)]
    text = " ".join(
        f"{r}{'?' if r.split()[0].lower() in {'how', 'did', 'do', 'have', 'what'} else '.'}" for r in remarks
    )
    return " ".join(part for part in (rng.choice(OPENERS), text, rng.choice(CLOSERS)) if part)


@dataclass
class Person:
    name: str
    friend: str
    values: dict[str, str]
    kinds: list[str]
    items: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Said:
    """A turn a question points at, placed in a session."""

    speaker: str
    text: str
    session: int
    echo: tuple[str, int] | None = None  # the friend's reply (text, session)
    turn_id: str = ""


def _person(rng: random.Random, name: str, friend: str, taken: dict[str, list[str]]) -> Person:
    job, employer = rng.choice(JOBS)
    values = {
        "lake": rng.choice(LAKES),
        "park": rng.choice(PARKS),
        "city": rng.choice(CITIES),
        "kid": rng.choice(KIDS),
        "breed": rng.choice(BREEDS),
        "dog": rng.choice(DOGS),
        "job": job,
        "employer": employer,
        "colour": rng.choice(COLOURS),
        "car": rng.choice(CARS),
        "book": rng.choice(BOOKS),
        "course": rng.choice(COURSES),
        "race": rng.choice(RACES),
        "band": rng.choice(BANDS),
    }
    kinds = rng.sample(sorted(ACTIVITIES), 3)
    person = Person(name, friend, values, kinds)
    for kind in kinds:
        free = [a for a in sorted(ACTIVITIES[kind]) if a not in taken.get(kind, [])]
        person.items[kind] = rng.sample(free, 3)
        taken.setdefault(kind, []).extend(person.items[kind])
    return person


def _facts(rng: random.Random, person: Person) -> tuple[list[Said], list[dict[str, Any]]]:
    """What `person` says that questions point at, and the questions (gold: indexes into the first)."""
    said: list[Said] = []
    questions: list[dict[str, Any]] = []
    v = {**person.values, "p": person.name}

    def say(text: str, echo: str | None = None) -> int:
        session = rng.randrange(SESSIONS - 1)
        later = (echo.format(**v), rng.randrange(session + 1, SESSIONS)) if echo else None
        lead, tail = rng.choice(OPENERS), rng.choice(CLOSERS)
        said.append(
            Said(person.name, " ".join(t for t in (lead, text.format(**v), tail) if t), session, later)
        )
        return len(said) - 1

    for kind in person.kinds:
        gold = [
            say(ACTIVITIES[kind][item], rng.choice(ECHO).replace("{what}", item))
            for item in person.items[kind]
        ]
        questions.append({"query": rng.choice(GATHER[kind]).format(**v), "gold": gold, "type": "multi-hop"})
    for statement, asks in rng.sample(DETAILS, 5):
        gold = [say(statement)]
        questions += [{"query": q.format(**v), "gold": gold, "type": "single-hop"} for q in asks]
    for statement, question, echo in rng.sample(EVENTS, 4):
        questions.append({"query": question.format(**v), "gold": [say(statement, echo)], "type": "temporal"})
    for statement, question in rng.sample(TRAITS, 3):
        questions.append({"query": question.format(**v), "gold": [say(statement)], "type": "open-domain"})
    return said, questions


def _date_label(day: datetime.date) -> str:
    return f"{day:%A}, {day.day} {day:%B %Y}"


def generate(seed: int = SEED) -> dict[str, list[dict[str, Any]]]:
    """The four files' rows."""
    rng = random.Random(seed)
    atoms: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    unanswerable: list[dict[str, Any]] = []
    for number, (first, second) in enumerate(PAIRS):
        taken: dict[str, list[str]] = {}
        people = [_person(rng, first, second, taken), _person(rng, second, first, taken)]
        start = datetime.date(2023, 1, 2) + datetime.timedelta(days=rng.randrange(60))
        said: list[Said] = []
        asked: list[dict[str, Any]] = []
        for person in people:
            facts, questions = _facts(rng, person)
            offset = len(said)
            said += facts
            asked += [{**q, "gold": [offset + g for g in q["gold"]]} for q in questions]
        placed: dict[int, list[tuple[str, str, int | None]]] = {s: [] for s in range(SESSIONS)}
        for index, fact in enumerate(said):
            placed[fact.session].append((fact.speaker, fact.text, index))
            if fact.echo is not None:
                friend = next(p.friend for p in people if p.name == fact.speaker)
                placed[fact.echo[1]].append((friend, fact.echo[0], None))
        for session in range(SESSIONS):
            day = start + datetime.timedelta(days=14 * session + rng.randrange(3))
            lines = placed[session]
            rng.shuffle(lines)
            slots = sorted(rng.sample(range(TURNS_PER_SESSION), len(lines)))
            by_slot = dict(zip(slots, lines, strict=True))
            for turn in range(TURNS_PER_SESSION):
                speaker, text, index = by_slot.get(turn, ((first, second)[turn % 2], _chatter(rng), None))
                turn_id = f"d{number}-s{session:02d}-t{turn:02d}"
                atoms.append(
                    {
                        "id": turn_id,
                        "slot": "knowledge",
                        "name": turn_id,
                        "text": f"[{_date_label(day)}] {speaker}: {text}",
                        "metadata": {"atom_type": "project-lore", "tags": ["dialogue"]},
                    }
                )
                if index is not None:
                    said[index].turn_id = turn_id
        for question in asked:
            queries.append(
                {
                    "id": f"g{len(queries) + 1:03d}",
                    "query": question["query"],
                    "gold": [said[g].turn_id for g in question["gold"]],
                    "type": question["type"],
                }
            )
        for person in people:
            for template in rng.sample(UNANSWERABLE, 5):
                unanswerable.append(
                    {"id": f"gu{len(unanswerable) + 1:03d}", "query": template.format(p=person.name)}
                )
    return {"atoms": atoms, "queries": queries, "unanswerable": unanswerable, "nonsense": _nonsense()}


def _nonsense() -> list[dict[str, Any]]:
    """The engineering set's nonsense probes: they do not depend on what the store holds."""
    source = OUT.parent / "nonsense.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{"id": f"g{row['id']}", "query": row["query"]} for row in rows]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> int:
    files = generate()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        write_jsonl(OUT / f"{name}.jsonl", rows)
    kinds: dict[str, int] = {}
    for query in files["queries"]:
        kinds[query["type"]] = kinds.get(query["type"], 0) + 1
    print(
        f"wrote {len(files['atoms'])} turns, {len(files['queries'])} questions {kinds}, "
        f"{len(files['unanswerable'])} unanswerable, {len(files['nonsense'])} nonsense to {OUT}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
