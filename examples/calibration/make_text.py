"""Compose ``kvscale-calibration.txt``: calibration text written for the kvscale project.

Calibration sets for KV-cache scales are usually a few hundred samples of ordinary text: prose on
many subjects, chat turns, instructions, some code and numbers. This script writes such a text
from material authored for kvscale alone (no book, article, licence or repository was copied):
hand-written passages, used once each, and sentence templates with word lists, combined by a
seeded random generator into paragraphs, dialogues, how-tos, e-mails, FAQs, word problems, lists,
code snippets (Python, JavaScript, TypeScript, Rust, Go, C, SQL, shell), tables (Markdown, CSV),
JSON and log excerpts. The result is deterministic: the same bytes on every run and platform
(only ``random.Random(seed)`` with ``random()``, ``choice``, ``randint``, ``sample``, ``shuffle``
is used, whose sequences Python keeps stable).

    python3 examples/calibration/make_text.py             # write kvscale-calibration.txt here
    python3 examples/calibration/make_text.py --check     # exit 1 if the file is not this output
    python3 examples/calibration/make_text.py --stats     # size, sentences, distinct sentences

The text is released with kvscale under the Apache-2.0 licence.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

# The word lists and templates below are laid out by hand for reading; keep the formatter off.
# fmt: off

SEED = 20251202
TARGET_BYTES = 300_000
OUT = Path(__file__).with_name("kvscale-calibration.txt")

# --- shared vocabulary ----------------------------------------------------------------------------

FIRST = (
    "Amara Ben Chiara Dmitri Elif Farid Greta Hiro Ines Jonas Kavya Lars Mei Nadia Omar Priya "
    "Quentin Rosa Sami Tamsin Ugo Vera Wendell Ximena Yusuf Zofia Aiden Bea Callum Dara Emeka "
    "Freya Gabriel Hana Idris Jude Keiko Leon Maeve Nico Oona Pavel Rania Soren Tova Umar Vivian "
    "Wim Yara Zeke Alma Bruno Cleo Dev Esme Felix Gwen Hugo Isla Joaquin"
).split()
LAST = (
    "Achterberg Bellamy Castellano Draper Eriksen Fairweather Garzon Holloway Ibarra Jankowski "
    "Kessler Lindqvist Marchetti Nakamura Okafor Pemberton Quist Rahman Salazar Thorne Ulrich "
    "Vasquez Whitlock Yilmaz Zeller Abbott Brannigan Colquhoun Dunmore Esposito Fenwick Gallo "
    "Haddad Iverson Juarez Kowalczyk Larkin Moreau Novak Ortega"
).split()
TOWNS = [
    "Ashcombe", "Brackenford", "Caldermoor", "Dunmere", "Elmstead", "Fenwick Cross", "Garrow",
    "Harlow Bay", "Inverleigh", "Kestrel Point", "Larchmont", "Millbeck", "Northwold",
    "Ostrava Hill", "Pellingham", "Quarry End", "Redwater", "Saltmarsh", "Thornbury", "Upper Vale",
    "Westerling", "Yarrowby", "Coldharbour", "Marrowgate", "Stillwater",
]
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = (
    "January February March April May June July August September October November December"
).split()


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _fill(rng: random.Random, template: str, slots: dict[str, list[str]]) -> str:
    """Replace each ``{slot}`` with a random filler; numeric slots are generated."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in slots:
            return rng.choice(slots[key])
        if key == "name":
            return rng.choice(FIRST)
        if key == "fullname":
            return _name(rng)
        if key == "town":
            return rng.choice(TOWNS)
        if key == "day":
            return rng.choice(WEEKDAYS)
        if key == "month":
            return rng.choice(MONTHS)
        if key == "year":
            return str(rng.randint(1871, 2024))
        if key == "n1":
            return str(rng.randint(2, 9))
        if key == "n2":
            return str(rng.randint(11, 95))
        if key == "n3":
            return str(rng.randint(120, 980))
        if key == "pct":
            return str(rng.randint(3, 87))
        if key == "dec":
            return f"{rng.uniform(0.5, 9.9):.1f}"
        if key == "time":
            return f"{rng.randint(6, 21)}:{rng.choice(('00', '15', '30', '45'))}"
        raise KeyError(key)

    text = re.sub(r"\{(\w+)\}", one, template)
    return text[0].upper() + text[1:]


# --- topic prose ----------------------------------------------------------------------------------
# Each topic: word lists (slots) and sentence templates. A paragraph takes 4-7 distinct templates
# of one topic, so a paragraph reads as one subject while the fillers keep sentences distinct.

TOPICS: dict[str, tuple[dict[str, list[str]], list[str]]] = {
    "garden": (
        {
            "plant": [
                "tomatoes", "runner beans", "lavender", "garlic", "rhubarb", "sweet peas",
                "courgettes", "blackcurrants", "chard", "marigolds", "leeks", "strawberries",
                "broad beans", "rosemary", "dahlias", "parsnips",
            ],
            "task": [
                "mulching", "pruning", "thinning the seedlings", "turning the compost",
                "staking", "dividing the clumps", "netting against birds", "weeding between rows",
            ],
            "soil": ["heavy clay", "sandy loam", "chalky ground", "peaty soil", "stony beds"],
            "pest": ["slugs", "aphids", "pigeons", "vine weevils", "blackfly", "caterpillars"],
        },
        [
            "{plant} do best in {soil} if you dig in plenty of leaf mould the autumn before.",
            "The trick with {plant} is patience: they sulk for a fortnight and then take off.",
            "{task} takes an hour on a Saturday and saves a week of trouble in {month}.",
            "Our allotment in {town} sits on {soil}, which drains badly after a wet spring.",
            "Last year the {pest} found the {plant} before we did, so this time they are under "
            "fleece until the stems harden.",
            "A neighbour swears by coffee grounds against {pest}, though I have never seen "
            "proof that it works.",
            "Sow {plant} thinly; crowded rows look generous in {month} and disappointing by "
            "midsummer.",
            "Water in the evening so that less is lost to the sun, and aim at the roots rather "
            "than the leaves.",
            "If the leaves of the {plant} turn yellow from the bottom up, the plants are usually "
            "hungry rather than ill.",
            "{name} keeps a notebook of first and last frost dates, and the entries go back "
            "{n2} years.",
            "I stopped {task} in the heat of the day after two afternoons of wilting, mine and "
            "the plants'.",
            "A shallow tray of beer catches {pest} overnight, which is grim but effective.",
            "Between the {plant} and the {plant} there is room for a row of lettuce that will "
            "be cut before either needs the space.",
            "On {soil} the first job is always drainage; everything else follows from it.",
            "The seed packets promised {n2} days to harvest, and for once they were right.",
            "We saved seed from the best {plant} and labelled the envelopes with the year and "
            "the bed.",
        ],
    ),
    "kitchen": (
        {
            "dish": [
                "lentil soup", "a tray of roast vegetables", "flatbreads", "a lemon cake",
                "fish stew", "mushroom risotto", "chickpea curry", "a potato gratin",
                "oat biscuits", "a tomato sauce", "dumplings", "a rice salad",
            ],
            "ingredient": [
                "smoked paprika", "brown butter", "fresh ginger", "a splash of vinegar",
                "toasted cumin", "grated parmesan", "lemon zest", "miso", "chopped dill",
                "black pepper", "a pinch of sugar", "tahini",
            ],
            "tool": [
                "a cast-iron pan", "the slow cooker", "a sharp knife", "a digital scale",
                "a wooden spoon", "the oven thermometer", "a wide saucepan",
            ],
        },
        [
            "{dish} tastes better the next day, once the flavours have settled.",
            "Add {ingredient} at the end; cooked too long, it turns flat.",
            "Weigh the flour on {tool} rather than by the cup, and the results stop varying.",
            "My grandmother made {dish} every {day}, and nobody ever wrote the recipe down.",
            "The oven in our flat runs about {n2} degrees hot, so everything bakes for less "
            "time than the book says.",
            "If the sauce splits, whisk in a spoonful of cold water off the heat.",
            "{dish} for six needs a bigger pot than you think; use {tool}.",
            "Salt the water until it tastes pleasantly seasoned, not like the sea.",
            "For {dish}, fry the onions slowly for a full {n2} minutes until they are soft and "
            "sweet.",
            "{name} adds {ingredient} to almost everything and is rarely wrong.",
            "Rest the dough for half an hour; it will roll out without springing back.",
            "Taste as you go, because the same recipe never behaves the same way twice.",
            "A squeeze of lemon rescues {dish} that tastes dull but not underseasoned.",
            "We double the quantity of {dish} and freeze half in flat bags.",
            "Toast the spices in a dry pan until they smell warm, then stop before they smoke.",
        ],
    ),
    "weather": (
        {
            "front": ["a cold front", "a band of drizzle", "a ridge of high pressure",
                      "a slow-moving low", "sea fog", "a line of thunderstorms"],
            "wind": ["a stiff westerly", "a light northerly breeze", "gusts of {n2} km/h",
                     "a raw easterly", "calm air"],
            "sky": ["low grey cloud", "clear blue skies", "broken cloud", "a hazy sun",
                    "towering cumulus"],
        },
        [
            "{front} will cross the region on {day}, bringing {wind} and a drop of "
            "{n1} degrees.",
            "Mornings start under {sky}, with temperatures near {n1} degrees in {town}.",
            "Rainfall in {month} reached {n2} millimetres, about {pct} percent above the "
            "long-term average.",
            "Farmers around {town} have waited weeks for a dry spell long enough to cut hay.",
            "By the afternoon {sky} should give way to showers, some of them heavy.",
            "Coastal roads may be slippery where {front} lingers overnight.",
            "The highest reading of the week was {n2} degrees, recorded at the airport "
            "weather station.",
            "Forecasters expect {wind} to ease by evening, leaving a cold, still night.",
            "Snow is unlikely below {n3} metres, though sleet may reach the hills.",
            "A weather station on the roof of the school in {town} logs a reading every "
            "{n1} minutes.",
            "The river rose {dec} metres overnight after the rain upstream.",
            "Pollen counts will be high while {sky} and warm air persist.",
        ],
    ),
    "history": (
        {
            "building": ["the corn exchange", "the old mill", "the railway station",
                         "the lighthouse", "the parish hall", "the brick kilns",
                         "the covered market", "the toll bridge"],
            "trade": ["wool", "salt", "pottery", "rope", "leather", "paper", "glass", "timber"],
            "event": ["the great flood", "the mill fire", "the coming of the railway",
                      "the strike at the docks", "the harbour collapse", "the first elections"],
        },
        [
            "{town} grew rich on {trade} long before anyone there had seen a steam engine.",
            "{building} was finished in {year}, three years late and far over budget.",
            "After {event}, half the families on the lower streets moved uphill for good.",
            "Records kept by the council in {year} list {n3} households and {n2} shops.",
            "The local museum keeps a ledger from {building}, written in a careful, slanted hand.",
            "Children in {town} were taught that {event} happened on a {day}, though the "
            "newspapers disagree.",
            "{building} still carries a stone plaque with the names of the men who built it.",
            "By {year} the {trade} trade had moved to the coast, and the town shrank by a third.",
            "Letters from the period describe {event} in surprisingly calm language.",
            "A survey map of {town} from {year} shows orchards where the car park is now.",
            "{fullname} ran {building} for forty years and left it to the town in a will.",
            "Historians still argue about whether {event} was an accident.",
        ],
    ),
    "science": (
        {
            "thing": ["a pendulum", "a glass of water", "a bicycle wheel", "a soap bubble",
                      "a magnet", "a prism", "a kettle", "a violin string", "a satellite"],
            "idea": ["energy is conserved", "light bends as it enters glass",
                     "heat flows from hot to cold", "pressure falls with height",
                     "a spinning object resists changes to its axis",
                     "sound needs a medium to travel through"],
            "unit": ["joules", "newtons", "pascals", "hertz", "watts", "kelvin"],
        },
        [
            "{thing} is a good way to see that {idea}.",
            "A simple experiment with {thing} shows why {idea}.",
            "Measured in {unit}, the effect is small but easy to detect with care.",
            "Students often expect heavier objects to fall faster, and the first experiment "
            "surprises them.",
            "If you double the length of a pendulum, its period grows by a factor of about "
            "1.41, not 2.",
            "The surface of {thing} reflects some light and lets the rest pass through.",
            "Nothing in the equations says {idea}; it follows from them once you look closely.",
            "Repeating the measurement {n2} times and averaging cuts the random error by a "
            "factor of the square root of that number.",
            "A graph of the results is nearly a straight line, which suggests a linear law.",
            "The difference between the two readings was {dec} percent, within the error of "
            "the instrument.",
            "Engineers rely on the fact that {idea} when they design anything from bridges to "
            "boilers.",
            "Good notes record the conditions of an experiment, not only its result.",
        ],
    ),
    "money": (
        {
            "item": ["rent", "groceries", "the electricity bill", "insurance", "bus fares",
                     "the phone contract", "school trips", "car repairs"],
            "habit": ["checking the account every {day}", "keeping receipts in an envelope",
                      "rounding every purchase up", "paying bills the day they arrive",
                      "writing a monthly budget on paper"],
        },
        [
            "{item} takes about {pct} percent of the household budget each month.",
            "{habit} sounds tedious but catches mistakes early.",
            "An emergency fund of three months of expenses is a common target, though any "
            "amount helps.",
            "Interest on a card balance of {n3} euros at {n2} percent a year adds up faster "
            "than most people expect.",
            "{name} moved {item} to a fixed date so that it never lands before payday.",
            "Comparing prices per kilogram rather than per pack changes what ends up in the "
            "basket.",
            "A budget is a plan for money you have, not a list of wishes.",
            "When {item} went up by {pct} percent, we cut back elsewhere instead of borrowing.",
            "Automatic transfers on payday make saving the default rather than an effort.",
            "Small monthly subscriptions are easy to forget; we found {n1} we no longer used.",
            "Keep the documents for large purchases, since warranty claims need them.",
        ],
    ),
    "software": (
        {
            "practice": ["code review", "continuous integration", "pair programming",
                         "writing tests first", "small commits", "feature flags",
                         "structured logging", "load testing"],
            "problem": ["a flaky test", "a memory leak", "a race condition",
                        "an off-by-one error", "a slow database query", "a missing index",
                        "a timezone bug", "a deadlock"],
            "tool": ["the profiler", "a debugger", "git bisect", "the query planner",
                     "a core dump", "the metrics dashboard"],
        },
        [
            "{practice} catches problems while they are still cheap to fix.",
            "We traced {problem} to a cache that was never invalidated.",
            "{tool} showed that {pct} percent of the time went into a single function.",
            "A good error message says what went wrong, where, and what to do next.",
            "The team adopted {practice} after {problem} reached production twice.",
            "{name} found {problem} with {tool} in under an hour.",
            "Naming things well is most of the work of making code readable.",
            "Every bug fix should come with a test that fails without the fix.",
            "The build takes {n1} minutes, which is long enough that people stop waiting "
            "for it.",
            "Deleting code is often the safest change you can make.",
            "When the service slowed down, {tool} pointed straight at {problem}.",
            "Measure before optimizing; the slow part is rarely where you expect it.",
            "Documentation that lives next to the code is the only kind that stays current.",
            "We release on {day}s so that the whole team is around if something breaks.",
        ],
    ),
    "health": (
        {
            "activity": ["a brisk walk", "swimming", "cycling to work", "stretching",
                         "yoga", "gardening", "climbing stairs", "rowing"],
            "benefit": ["better sleep", "a steadier mood", "stronger knees",
                        "lower blood pressure", "more energy in the afternoon"],
        },
        [
            "{activity} for {n2} minutes a day is enough to make a difference.",
            "Many people notice {benefit} within a few weeks of regular exercise.",
            "Drink water before you feel thirsty, especially on hot days.",
            "{name} started with {activity} after a back injury and never stopped.",
            "A doctor in {town} recommends {activity} to almost every patient over fifty.",
            "Rest days matter as much as training days.",
            "If a new pain appears during exercise, stop and have it checked.",
            "Sleep is the cheapest and most neglected medicine there is.",
            "The clinic offers free blood pressure checks every {day} morning.",
            "Warm up gently; cold muscles strain easily.",
            "Small changes you keep are worth more than dramatic ones you abandon.",
        ],
    ),
    "travel": (
        {
            "transport": ["the night train", "a ferry", "a regional bus", "a hired bicycle",
                          "the cable car", "a shared taxi"],
            "place": ["the old harbour", "a hill village", "the cathedral square",
                      "a lakeside campsite", "the covered market", "the botanical garden"],
        },
        [
            "We took {transport} to {town} and arrived just after {time}.",
            "{place} is quietest before nine, when the tour groups are still at breakfast.",
            "Pack one layer more than the forecast suggests.",
            "The ticket for {transport} cost {n2} euros and included a seat reservation.",
            "A paper map saved us when the phone battery died near {place}.",
            "Locals in {town} eat late, so most restaurants open after seven.",
            "{transport} was slower than driving but far more pleasant.",
            "Learn a handful of words in the local language; people appreciate the effort.",
            "From {place} a footpath follows the river for {n1} kilometres.",
            "Keep a photo of your passport somewhere separate from the passport itself.",
            "{name} recommended {place}, and it was the highlight of the trip.",
        ],
    ),
    "music": (
        {
            "instrument": ["the cello", "an upright piano", "the trumpet", "a classical guitar",
                           "the accordion", "a drum kit", "the clarinet", "the violin"],
            "skill": ["sight-reading", "keeping time", "playing by ear", "improvising",
                      "tuning", "reading chord charts"],
        },
        [
            "Practising {instrument} for twenty minutes a day beats two hours on a Sunday.",
            "{skill} improves fastest when you do a little of it every day.",
            "The community orchestra in {town} rehearses on {day} evenings in the school hall.",
            "{name} bought {instrument} second-hand for {n3} euros and had it restrung.",
            "A metronome is honest in a way that friends are not.",
            "Slow practice feels like wasted time, but it is where the fingers learn.",
            "Recording yourself is uncomfortable and very useful.",
            "The piece is in {n1} flats, which frightens beginners more than it should.",
            "Playing with others teaches listening, which solo practice cannot.",
            "{instrument} sounds warmer in a room with wooden floors.",
        ],
    ),
    "work": (
        {
            "meeting": ["the weekly planning meeting", "the budget review", "a client call",
                        "the quarterly review", "the morning stand-up", "a hiring panel"],
            "doc": ["the project plan", "the risk register", "the meeting notes",
                    "the onboarding guide", "the release checklist", "the job description"],
        },
        [
            "{meeting} ran over by {n2} minutes because nobody had read {doc}.",
            "Send the agenda a day ahead and most meetings get shorter.",
            "{name} owns {doc} and updates it every {day}.",
            "Decisions belong in writing, with the date and the names of those who made them.",
            "The office in {town} moved to a four-day week last {month}.",
            "If a meeting has no decision to make, it can usually be an email.",
            "New starters get a mentor for their first {n1} weeks.",
            "We review {doc} at the start of {meeting} so everyone begins from the same page.",
            "A clear owner for each task avoids the familiar sentence 'I thought you had it'.",
            "Feedback lands better when it is specific, timely and private.",
        ],
    ),
    "nature": (
        {
            "animal": ["a heron", "two foxes", "a barn owl", "a family of otters",
                       "a kingfisher", "red deer", "a hedgehog", "swifts", "a buzzard"],
            "habitat": ["the reed beds", "the beech wood", "the estuary mud", "the hay meadow",
                        "the old quarry", "the hedgerow"],
        },
        [
            "We saw {animal} near {habitat} just after dawn.",
            "{habitat} floods every winter, which is exactly why the birds like it.",
            "Volunteers counted {n2} species on a single morning walk in {month}.",
            "{animal} had been absent from {town} for decades before the river was cleaned up.",
            "Leave a corner of the garden untidy and insects will move in within a season.",
            "Binoculars matter less than patience and a quiet pair of boots.",
            "The swallows arrive around the middle of {month} and leave before the first frost.",
            "{name} has photographed {animal} at {habitat} every year since {year}.",
            "Mud on the path showed fresh tracks, probably {animal}.",
            "Cutting the meadow late in summer lets the wild flowers set seed.",
        ],
    ),
    "repair": (
        {
            "thing": ["the bicycle", "a dripping tap", "the boiler", "an old radio",
                      "the washing machine", "a squeaky door", "the lawnmower", "a table lamp"],
            "part": ["the washer", "a worn belt", "the fuse", "a seized bearing", "the brake cable",
                     "a loose connection", "the filter", "the thermostat"],
        },
        [
            "{thing} stopped working on {day}, and the culprit was {part}.",
            "Take a photo before you take anything apart; it is the best manual you will have.",
            "Replacing {part} cost {n1} euros and twenty minutes.",
            "Switch off the power at the board before opening {thing}.",
            "{name} fixes {thing} for neighbours in exchange for cake.",
            "A repair café in {town} meets on the first {day} of the month.",
            "Most squeaks are dirt, not wear; clean before you oil.",
            "The manual for {thing} listed {part} as a part that never needs replacing.",
            "Keep screws in a labelled egg box in the order they came out.",
            "If a fix needs force, something is probably still fastened.",
        ],
    ),
    "learning": (
        {
            "subject": ["algebra", "Spanish", "chemistry", "touch typing", "drawing",
                        "statistics", "map reading", "first aid"],
            "method": ["spaced repetition", "teaching someone else", "worked examples",
                       "short daily sessions", "practice tests", "flash cards"],
        },
        [
            "{method} is the most reliable way I know to remember {subject}.",
            "Students who explain {subject} aloud understand it better than those who reread "
            "notes.",
            "{name} learned {subject} at {n2} and says it was easier than expected.",
            "The evening class in {town} covers {subject} in {n1} weeks.",
            "Mistakes are information, not verdicts.",
            "Start with the questions you cannot answer; they show where the gaps are.",
            "{method} works because forgetting and recalling strengthen the memory.",
            "A good teacher makes the next step feel small.",
            "Ten minutes of {subject} every day outperforms a weekend of cramming.",
            "Write down why an answer is right, not just that it is.",
        ],
    ),
}

MORE_TEMPLATES: dict[str, list[str]] = {
    "garden": [
        "The {plant} by the shed get the afternoon sun and ripen a week before the rest.",
        "{name} grows {plant} in old paint tins on a balcony in {town}, with surprising success.",
        "After {task} the beds looked bare, but new growth showed within a fortnight.",
        "Frost in late {month} caught the {plant}, and half of them never recovered.",
        "The compost heap reached {n2} degrees in the middle, warm enough to steam on cold "
        "mornings.",
        "{soil} holds water for weeks, so the {plant} there need far less watering.",
    ],
    "kitchen": [
        "{name} brought {dish} to the street party, and the dish came back empty.",
        "The recipe for {dish} calls for {ingredient}, which the corner shop in {town} never "
        "stocks.",
        "A cheap {tool} turned out to be the most useful thing in the drawer.",
        "{dish} needs {n2} minutes in a hot oven and a few minutes of rest before serving.",
        "We tried {dish} with {ingredient} instead of cream, and nobody noticed the difference.",
    ],
    "weather": [
        "{town} recorded {n2} millimetres of rain in a single afternoon, the most since {year}.",
        "By {time} {sky} had spread across the whole county.",
        "Under {sky} the hills looked closer than they were.",
        "Visibility fell to {n3} metres on the coast road as {front} moved in.",
        "The frost lasted until {time} in sheltered valleys, while the towns stayed above zero.",
    ],
    "history": [
        "The oldest house in {town} dates from {year}, although its front was rebuilt later.",
        "A photograph of {building} from {year} shows a crowd gathered for its opening.",
        "{trade} merchants built most of the tall houses along the river in {town}.",
        "Older residents still call the square by the name it had before {event}.",
        "Parish registers record {n2} baptisms in {year}, and almost as many burials.",
    ],
    "science": [
        "The student measured {thing} {n1} times and got {n1} slightly different answers.",
        "A cheap sensor and a laptop are enough to show that {idea}.",
        "The reading drifted by {dec} units over an hour, so the instrument was recalibrated.",
        "Put {thing} next to a ruler in the photograph, or nobody can judge its size later.",
        "An estimate on the back of an envelope said {n3}; the careful measurement gave {n3}.",
    ],
    "money": [
        "A second-hand washing machine for {n3} euros has lasted longer than our new one did.",
        "{name} saves the coins from every purchase and banks about {n3} euros a year.",
        "The bank charged {n1} euros for a late payment, which was more than the interest.",
        "Splitting {item} between flatmates works best with a shared spreadsheet.",
        "Prices at the market in {town} rise in {month}, when the tourists arrive.",
    ],
    "software": [
        "The migration moved {n3} thousand rows overnight without a single error.",
        "{name} rewrote the parser in a weekend, and the test suite made it safe to do so.",
        "Rolling back took {n1} minutes because we had practised it the week before.",
        "The on-call engineer was paged at {time} by {problem} in the billing service.",
        "After the switch to {practice}, incidents dropped by {pct} percent over a quarter.",
        "A dashboard nobody looks at is decoration.",
    ],
    "health": [
        "The walking group in {town} meets at {time} on {day}s, whatever the weather.",
        "{name} swapped the lift for the stairs and noticed {benefit} within a month.",
        "A resting heart rate of {n2} beats a minute is normal for many adults.",
        "Ten thousand steps is a round number, not a medical threshold.",
    ],
    "travel": [
        "The border crossing took {n2} minutes, most of it waiting for one slow queue.",
        "We left {town} at {time} on {transport} and reached the coast by lunch.",
        "The hostel near {place} charged {n2} euros a night, breakfast included.",
        "{name} keeps a list of every town visited, now {n3} entries long.",
    ],
    "music": [
        "The concert in {town} sold out in {n1} days, mostly to people who had never been.",
        "{name} has played {instrument} in the same band since {year}.",
        "The hall's acoustics flatter {instrument} and punish a drummer who plays too loudly.",
        "Scales are dull, and nobody who skips them ever plays fast cleanly.",
    ],
    "work": [
        "Last quarter the team closed {n3} tickets, {pct} percent of them within a day.",
        "{name} joined the {town} office in {year} and now runs the support team.",
        "{meeting} moved to {day}s at {time}, which suits the people in other time zones.",
        "The best handover notes answer the questions the next person will have at 3 a.m.",
    ],
    "nature": [
        "At {habitat} in {month} the air is full of the sound of grasshoppers.",
        "{animal} crossed the lane in front of the car near {town} at dusk.",
        "The moth trap caught {n2} species overnight, three of them new to the county list.",
        "Oak trees can support hundreds of insect species, more than almost any other tree.",
    ],
    "repair": [
        "The shop wanted {n3} euros to repair {thing}; a replacement part online was {n1}.",
        "{name} learned to fix {thing} from a video and a lot of trial and error.",
        "A drop of thread-locker stops screws on {thing} from working loose.",
        "The volunteers at the repair café fixed {n2} items last {month}.",
    ],
    "learning": [
        "{name} passed the {subject} exam on the second attempt with {pct} percent.",
        "The library in {town} lends laptops to adults taking evening classes.",
        "A notebook of questions you got wrong is worth more than one of answers.",
        "Learning {subject} in a group kept me going when I would have given up alone.",
    ],
}
for _topic, _extra in MORE_TEMPLATES.items():
    TOPICS[_topic][1].extend(_extra)

USES: dict[str, int] = {}
"""How often each fixed piece of text has been used (reset by ``compose``)."""

FIXED_CAP = 2
"""A sentence or block without fillers appears at most this often."""
TEMPLATE_CAP = 6
"""A template with fillers is used at most this often (each time with other fillers)."""


def _cap(template: str) -> int:
    return TEMPLATE_CAP if "{" in template else FIXED_CAP


def _take(rng: random.Random, options: list[str], cap: int | None = None) -> str | None:
    """A random option used fewer than its cap times (then counted), or None."""
    free = [o for o in options if USES.get(o, 0) < (cap if cap is not None else _cap(o))]
    if not free:
        return None
    choice = rng.choice(free)
    USES[choice] = USES.get(choice, 0) + 1
    return choice


CONNECTIVES = [
    "Still, ", "Even so, ", "In practice, ", "Of course, ", "Then again, ", "In my experience, ",
    "For what it is worth, ", "Admittedly, ", "Usually, ", "As a rule, ",
]
IMPERATIVE = {
    "Sow", "Water", "Add", "Weigh", "Salt", "Rest", "Taste", "Toast", "Drink", "Warm", "Pack",
    "Learn", "Keep", "Take", "Switch", "Send", "Measure", "Leave", "Start", "Write", "Put", "If",
    "For", "Between", "By", "On", "After", "At", "Under", "A", "An", "Ten",
}
NO_LOWER = {"name", "fullname", "town", "day", "month", "I"}


def _sentence(rng: random.Random, template: str, slots: dict[str, list[str]], lead: bool) -> str:
    s = _fill(rng, template, slots)
    s = _fill(rng, s, slots) if "{" in s else s  # fillers may hold slots ("gusts of {n2}")
    first = template.split()[0]
    if lead and first not in IMPERATIVE and rng.random() < 0.3:
        keep = first.strip("{}") in NO_LOWER or first == "I"
        s = rng.choice(CONNECTIVES) + (s if keep else s[0].lower() + s[1:])
    return s


def topic_paragraph(rng: random.Random) -> str | None:
    topics = [t for t in sorted(TOPICS) if sum(USES.get(x, 0) < _cap(x) for x in TOPICS[t][1]) > 3]
    if not topics:
        return None
    slots, templates = TOPICS[rng.choice(topics)]
    sentences = []
    for _ in range(rng.randint(3, 6)):
        template = _take(rng, [t for t in templates if t not in sentences])
        if template is None:
            break
        sentences.append(template)
    return " ".join(_sentence(rng, t, slots, i > 0) for i, t in enumerate(sentences))


NEWS_DECISIONS = [
    "approve a cycle lane along the high street", "close the swimming pool for repairs over "
    "the summer", "extend library opening hours on weekday evenings", "build {n2} affordable "
    "homes on the former bus depot", "ban parking on the market square on {day}s",
    "plant {n3} trees along the ring road", "raise parking charges by {n2} cents an hour",
    "restore the clock tower above the town hall", "trial a free bus service on Sundays",
    "turn the old post office into a community centre", "light the riverside path at night",
    "set up a weekly farmers' market", "replace the footbridge over the canal",
]
NEWS_FOR = [
    "'This is long overdue,' said councillor {fullname}.",
    "'Residents have asked for this for years,' said {fullname}, who chairs the committee.",
    "Supporters said the plan would pay for itself within {n1} years.",
    "A petition in favour had collected {n3} signatures.",
    "'We listened, and we changed the plan twice,' said the council leader, {fullname}.",
    "'It will make the town centre safer for everyone,' said {fullname}.",
    "The local residents' association welcomed the vote in a short statement.",
    "{fullname}, who proposed the plan, called it 'a small change with a big effect'.",
    "A survey last {month} found that {pct} percent of residents supported the idea.",
    "'Other towns have done this and never looked back,' said councillor {fullname}.",
]
NEWS_AGAINST = [
    "Opponents argued that the cost, estimated at {n3},000 euros, could not be justified.",
    "{fullname}, who voted against, said the consultation had been rushed.",
    "Some shop owners on the high street fear the change will keep customers away.",
    "Critics pointed out that a similar scheme in {town} was abandoned after a year.",
    "Residents of the nearby streets raised concerns about noise and traffic.",
    "The opposition group said it would ask for the decision to be reviewed.",
    "{fullname} warned that the budget had no room for overruns.",
    "Several speakers asked why the money was not spent on road repairs instead.",
    "One councillor abstained, saying the figures had arrived too late to check.",
    "A resident told the meeting that the scheme had been 'decided before anyone asked us'.",
]
NEWS_NEXT = [
    "Work is expected to begin in {month}.", "A public meeting will be held at the town hall "
    "on {day} at {time}.", "The decision will be reviewed after {n1} months.",
    "Businesses have been invited to comment before the end of {month}.",
    "The first phase should be finished before next winter.",
    "Detailed plans will be published on the council website next week.",
    "Contractors will be chosen by the end of {month}.",
    "A report on the costs is due back to the committee in {n1} weeks.",
    "The council expects the work to cause some disruption on {day}s.",
    "Residents can see the drawings in the library until {day}.",
]
OPENING_LINES = [
    "The opening weekend drew a queue down the street.",
    "It opens at {time} every day except {day}.",
    "Customers can expect prices similar to the chains, the owner says.",
    "The building stood empty for {n1} years before the lease was signed.",
    "Three local people have been hired, with two more jobs to come.",
    "The owner hopes to add evening events once the first winter is over.",
    "Everything on the shelves is sourced within {n2} kilometres, the owner says.",
    "The shop took its name from the street's old name, used before {year}.",
]
SHOPS = [
    "bakery", "bicycle workshop", "second-hand bookshop", "repair café", "noodle bar",
    "hardware store", "cheese shop", "pottery studio", "coffee roastery", "climbing gym",
]
CAREERS = [
    "worked as a nurse for twenty years", "ran a food stall at festivals", "taught chemistry "
    "at the secondary school", "was an engineer on the ferries", "trained as a carpenter",
    "worked in a bank in the city", "spent a decade as a postman",
]


def news_brief(rng: random.Random) -> str | None:
    town = rng.choice(TOWNS)
    if rng.random() < 0.35:
        shop, career = rng.choice(SHOPS), rng.choice(CAREERS)
        owner = _name(rng)
        text = (
            f"A new {shop} has opened in {town}, run by {owner}, who {career}. "
            + _fill(rng, rng.choice(OPENING_LINES), {})
        )
        return f"{town}: new {shop} opens\n{text}"
    ayes = rng.randint(6, 19)
    noes = rng.randint(1, ayes - 1)
    decision = _fill(rng, rng.choice(NEWS_DECISIONS), {})
    decision = decision[0].lower() + decision[1:]
    lines = [_take(rng, pool, cap=4) for pool in (NEWS_FOR, NEWS_AGAINST, NEWS_NEXT)]
    if any(line is None for line in lines):
        return None
    parts = [f"{town} council voted {ayes} to {noes} on {rng.choice(WEEKDAYS)} to {decision}."]
    parts += [_fill(rng, line, {}) for line in lines if line is not None]
    return " ".join(parts)


STORY_PLANS = [
    "repaint the garden fence", "drive to {town} to see an old friend", "finish the quarterly "
    "report", "bake bread for the street party", "take the children to the coast", "clear out "
    "the attic", "try the new running route along the canal", "fix the leaking gutter",
    "sort through a box of old photographs", "cook dinner for eight", "plant the last of the "
    "bulbs", "catch the early train to the city",
]
STORY_OBSTACLES = [
    "it started raining before nine", "the car would not start", "the shop had sold out of "
    "the one thing that mattered", "a pipe burst under the kitchen sink", "the laptop refused "
    "to boot", "the neighbour's dog escaped and had to be chased down the lane", "the train "
    "was cancelled without explanation", "a headache arrived with breakfast", "the ladder "
    "turned out to be a metre too short", "an old friend rang and talked for two hours",
]
STORY_REACTIONS = [
    "{name} made a pot of coffee and considered the options.",
    "For a while {name} simply sat at the kitchen table and laughed.",
    "{name} phoned {other}, who always knew what to do.",
    "There was nothing for it but to improvise.",
    "{name} wrote a new list, shorter than the first.",
    "A walk round the block helped more than any amount of worrying.",
    "The sensible thing would have been to give up, so naturally {name} did not.",
    "{name} stood in the hallway for a full minute, keys in hand, deciding.",
    "A neighbour leaned over the wall with advice that was kind and entirely useless.",
    "{name} looked up the problem online and found nine opinions and no answers.",
    "It took a second cup of tea to see that the morning was not lost.",
    "{name} decided that this was exactly the sort of day that called for a bacon roll.",
    "Swearing helped a little; a plan helped more.",
    "{name} texted {other} a photo of the disaster with a single question mark.",
    "The radio played something cheerful, which was either a sign or an insult.",
]
STORY_ENDS = [
    "By the evening the job was half done, which felt like enough.",
    "In the end the day went better than planned, just not in the planned direction.",
    "The plan would keep until the following weekend; it had kept for months already.",
    "By {time} everything was back to normal, and the story was already funny.",
    "Looking back, it was the best {day} of the month.",
    "Nobody else ever found out how close it had come to disaster.",
    "The next morning, of course, everything worked perfectly.",
    "It made a good story at work the following week.",
    "By nightfall the only casualty was a bruised thumb.",
    "The lesson, if there was one, was to check the night before.",
    "The original plan happened a week later and was, by comparison, very dull.",
    "A takeaway and an early night closed the day on a better note.",
    "Nobody was hurt, nothing was broken for good, and the list survived.",
    "By {time} the kitchen was tidy and the whole thing seemed almost reasonable.",
    "Years later it was still the first story told at family dinners.",
]


def story(rng: random.Random) -> str | None:
    who = rng.choice(FIRST)
    plan = _fill(rng, rng.choice(STORY_PLANS), {})
    plan = plan[0].lower() + plan[1:]
    obstacle = rng.choice(STORY_OBSTACLES)
    reaction = _take(rng, STORY_REACTIONS, cap=4)
    end = _take(rng, STORY_ENDS, cap=4)
    if reaction is None or end is None:
        return None
    return " ".join([
        f"{who} had meant to {plan} on {rng.choice(WEEKDAYS)}, but {obstacle}.",
        _fill(rng, reaction, {"name": [who], "other": [o for o in FIRST if o != who]}),
        _fill(rng, end, {}),
    ])


PRODUCTS: dict[str, tuple[list[str], list[str]]] = {
    "kettle": (["boils a full jug in under three minutes", "is quieter than our old one",
                "has a clear water gauge", "switches off reliably"],
               ["the lid opens too far and hits the tap", "it drips when you pour quickly",
                "the handle gets warm"]),
    "pair of headphones": (["sound clear at low volume", "last {n2} hours on a charge",
                            "fold flat into the case", "block out most of the train noise"],
                           ["the ear pads get hot in summer", "the app is clumsy",
                            "the cable is short"]),
    "tent": (["goes up in ten minutes", "stayed dry through a night of heavy rain",
              "packs down small"], ["the pegs bend in hard ground", "the porch is tiny",
                                    "condensation collects inside on cold nights"]),
    "desk lamp": (["gives an even, warm light", "has a heavy base that never tips",
                   "dims smoothly"], ["the switch is hard to find in the dark",
                                      "the arm creeps down over time"]),
    "backpack": (["carries {n2} litres comfortably", "has a pocket for everything",
                  "survived two years of daily commuting"],
                 ["the zips are stiff", "the straps are too short for tall people",
                  "it is heavier than it looks"]),
    "coffee grinder": (["grinds evenly", "is easy to clean", "has a useful timer"],
                       ["it is loud", "static makes the grounds cling to the lid"]),
}
VERDICTS = {
    5: ["Would buy again without hesitation.", "Best purchase this year.",
        "Exactly as described.", "Five stars, and I rarely give them.",
        "Worth every cent."],
    4: ["Good value overall.", "Recommended, with small reservations.",
        "Does the job well.", "Minor niggles, but I am happy with it.",
        "Solid, and well made for the money."],
    3: ["Fine for the price.", "Not bad, not great.", "It works, but I expected more.",
        "Adequate; there are better options if you can spend more.",
        "Three stars because it does what it says, and no more."],
    2: ["I would look elsewhere next time.", "Disappointing for the money.",
        "Returned after a month."],
}


def review(rng: random.Random) -> str | None:
    product = rng.choice(sorted(PRODUCTS))
    pros, cons = PRODUCTS[product]
    stars = rng.choice([5, 4, 4, 3, 3, 2])
    p1, p2 = (_fill(rng, p, {}) for p in rng.sample(pros, 2))
    p1, p2 = p1[0].lower() + p1[1:], p2[0].lower() + p2[1:]
    con = rng.choice(cons)
    when = rng.choice(["in {month}", "{n1} weeks ago", "as a gift", "to replace an old one",
                       "on a friend's advice"])
    it = "They" if product.startswith("pair") else "It"
    verdict = _take(rng, VERDICTS[stars], cap=4)
    if verdict is None:
        return None
    return (
        f"Rating: {stars}/5. Bought this {product} {_lower_first(_fill(rng, when, {}))}. "
        f"{it} {p1} and {p2}, but {con}. {verdict} "
        f"({_name(rng)}, {rng.choice(TOWNS)})"
    )


def _lower_first(s: str) -> str:
    first = s.split()[0]
    return s if first in MONTHS or first in WEEKDAYS else s[0].lower() + s[1:]


LEAGUES = ["County League", "Valley Division", "Coastal League", "Sunday League",
           "Northern Premier", "Women's County Cup group"]
CLUB_SUFFIX = ["Rovers", "Athletic", "United", "Wanderers", "Town", "Harriers", "City"]


def sports_report(rng: random.Random) -> str:
    t1, t2 = rng.sample(TOWNS, 2)
    home = f"{t1} {rng.choice(CLUB_SUFFIX)}"
    away = f"{t2} {rng.choice(CLUB_SUFFIX)}"
    g1, g2 = rng.choice([0, 1, 1, 2, 2, 3, 4]), rng.choice([0, 0, 1, 1, 2, 3])
    goals = sorted(
        [(rng.randint(2, 90), home) for _ in range(g1)] + [(rng.randint(2, 90), away)
                                                           for _ in range(g2)]
    )
    scorers = {home: rng.sample(FIRST, 3), away: rng.sample(FIRST, 3)}
    if g1 > g2:
        head = f"{home} beat {away} {g1}-{g2}"
    elif g2 > g1:
        head = f"{away} won {g2}-{g1} away at {home}"
    else:
        head = f"{home} and {away} drew {g1}-{g2}"
    lines = [f"{head} on {rng.choice(['Saturday', 'Sunday', 'Wednesday'])} in front of "
             f"{rng.randint(300, 9000):,} spectators."]
    for minute, team in goals[:4]:
        lines.append(f"{rng.choice(scorers[team])} scored for {team} after {minute} minutes.")
    if not goals:
        lines.append(rng.choice([
            "Neither goalkeeper had much to do in a cautious game.",
            "The best chance fell to the visitors in stoppage time, but the shot went wide.",
        ]))
    return " ".join(lines)


def league_table(rng: random.Random) -> str:
    teams = [f"{t} {rng.choice(CLUB_SUFFIX)}" for t in rng.sample(TOWNS, 6)]
    rows = []
    for team in teams:
        w, d = rng.randint(1, 12), rng.randint(0, 6)
        lost = rng.randint(0, 18 - w - d) if w + d < 18 else 0
        gf, ga = w * 2 + d + rng.randint(0, 8), lost * 2 + d + rng.randint(0, 8)
        rows.append((3 * w + d, gf - ga, team, w + d + lost, w, d, lost, gf, ga))
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    out = ["| Pos | Team | P | W | D | L | GF | GA | Pts |", "|---:|---|---:|---:|---:|---:|---:|"
           "---:|---:|"]
    for pos, (pts, _, team, p, w, d, lost, gf, ga) in enumerate(rows, 1):
        out.append(f"| {pos} | {team} | {p} | {w} | {d} | {lost} | {gf} | {ga} | {pts} |")
    return f"{rng.choice(LEAGUES)}: table after round {rng.randint(8, 30)}\n\n" + "\n".join(out)


RECIPES: dict[str, tuple[list[tuple[str, float, str]], list[list[str]]]] = {
    "Red lentil soup": (
        [("red lentils", 60, "g"), ("onion", 0.5, ""), ("carrot", 0.5, ""),
         ("vegetable stock", 300, "ml"), ("ground cumin", 0.5, "tsp")],
        [["Soften the chopped onion and carrot in a little oil for ten minutes.",
          "Fry the onion and carrot gently until soft."],
         ["Add the cumin, then the lentils and stock.", "Stir in the cumin, lentils and stock."],
         ["Simmer for twenty minutes until the lentils collapse.",
          "Cook until the lentils are soft, about twenty minutes."],
         ["Blend half of it for a thicker soup, and season to taste.",
          "Season with salt and lemon juice before serving."]],
    ),
    "Oat and raisin biscuits": (
        [("rolled oats", 40, "g"), ("butter", 25, "g"), ("brown sugar", 20, "g"),
         ("plain flour", 25, "g"), ("raisins", 15, "g")],
        [["Heat the oven to 180 C and line a tray.", "Preheat the oven to 180 C."],
         ["Melt the butter with the sugar.", "Warm the butter and sugar until combined."],
         ["Stir in the oats, flour and raisins.", "Mix in the dry ingredients and raisins."],
         ["Bake spoonfuls for 12 to 14 minutes, until golden at the edges.",
          "Bake for about 13 minutes and cool on the tray."]],
    ),
    "Chickpea and spinach curry": (
        [("tinned chickpeas", 120, "g"), ("spinach", 50, "g"), ("chopped tomatoes", 100, "g"),
         ("onion", 0.5, ""), ("curry powder", 1, "tsp")],
        [["Fry the onion until golden.", "Cook the sliced onion until it browns lightly."],
         ["Add the curry powder and cook for a minute.", "Stir in the spice for a minute."],
         ["Add the tomatoes and chickpeas and simmer for fifteen minutes.",
          "Pour in the tomatoes, add the chickpeas and simmer."],
         ["Wilt the spinach into the pan just before serving.",
          "Fold in the spinach at the end."]],
    ),
}


def _qty(value: float, unit: str) -> str:
    if unit == "g" or unit == "ml":
        return f"{round(value / 5) * 5:g} {unit}"
    if unit == "tsp":
        return f"{value:g} tsp"
    return f"{value:g}"


def recipe(rng: random.Random) -> str | None:
    title = _take(rng, sorted(RECIPES), cap=3)
    if title is None:
        return None
    ingredients, steps = RECIPES[title]
    serves = rng.randint(2, 8)
    lines = [f"{title} (serves {serves})", "", "Ingredients:"]
    lines += [f"- {_qty(q * serves, u)} {name}".replace("  ", " ") for name, q, u in ingredients]
    lines += ["", "Method:"]
    lines += [f"{i}. {rng.choice(opts)}" for i, opts in enumerate(steps, 1)]
    return "\n".join(lines)


DIARY = [
    "Woke at {time} to rain on the skylight.", "Walked to {town} and back, about {n1} km.",
    "{name} called about the weekend; we settled on {day}.", "Finished the book about the "
    "lighthouse keepers at last.", "The heating engineer came and went without fixing anything.",
    "Spent the afternoon sorting receipts and found {n2} euros I had forgotten about.",
    "Made soup from whatever was left in the fridge; better than it had any right to be.",
    "The swifts are back over the rooftops.", "Too tired to read, so an early night.",
    "Met {name} at the market and bought far too many tomatoes.",
    "Wrote {n3} words of the report before lunch, then none after.",
    "Fixed the squeaky hinge on the back door with a drop of oil.",
    "A parcel arrived for the neighbours, who are away until {day}.",
    "Long phone call with my sister; she is thinking of moving to {town}.",
    "First frost on the car this morning.", "Planted {n2} tulip bulbs along the path.",
]


def diary(rng: random.Random) -> str | None:
    lines = []
    for _ in range(rng.randint(3, 5)):
        line = _take(rng, [d for d in DIARY if d not in lines], cap=3)
        if line is None:
            return None
        lines.append(line)
    date = f"{rng.choice(WEEKDAYS)} {rng.randint(1, 28)} {rng.choice(MONTHS)}"
    return date + ". " + " ".join(_fill(rng, s, {}) for s in lines)


def timetable(rng: random.Random) -> str:
    stops = rng.sample(TOWNS, rng.randint(4, 6))
    gaps = [rng.randint(6, 25) for _ in stops[1:]]
    starts = sorted(rng.sample(range(6 * 60, 20 * 60, 15), 4))
    header = "| Stop | " + " | ".join("Dep" for _ in starts) + " |"
    rows = [f"Bus {rng.randint(2, 99)}: {stops[0]} to {stops[-1]}", "", header,
            "|---" + "|---:" * len(starts) + "|"]
    for i, stop in enumerate(stops):
        offset = sum(gaps[:i])
        cells = [f"{(s + offset) // 60:02d}:{(s + offset) % 60:02d}" for s in starts]
        rows.append(f"| {stop} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


# --- hand-written passages (each used once) -------------------------------------------------------

PASSAGES = [
    "The bus from the station was late again, so I walked. It is only two kilometres, and the "
    "road runs past the allotments, where an old man was already tying up his beans at seven in "
    "the morning. He waved with the string still in his hand. By the time I reached the office "
    "I had forgotten why I was annoyed.",
    "Every library I have loved had one slightly broken chair, a radiator that clanked, and a "
    "librarian who knew which books went missing and who had probably borrowed them. The "
    "catalogue was on cards long after it should have been, and nobody minded.",
    "When the power went out across the valley, the first thing people did was step outside. "
    "Doors opened up and down the street, and neighbours who nodded to each other twice a year "
    "stood talking in the dark, comparing torches and guessing how long it would last. It "
    "lasted four hours. Nobody went back in until the lights came on.",
    "A map is an argument about what matters. The road atlas in my father's car left out every "
    "footpath and showed every petrol station; the walking map I carry now does the opposite. "
    "Both were accurate, and neither was complete.",
    "She kept bees for thirty years and claimed she could tell the weather by the sound of the "
    "hive. In a heatwave the note rose, she said, and before a storm the bees came home early "
    "and crowded the entrance. I never learned to hear it, but I believed her.",
    "The first computer in our school lived in a cupboard and had to be wheeled into the "
    "classroom on a trolley. We took turns typing in a program from a magazine, line by line, "
    "and when it finally ran it drew a wobbly square. We cheered as if it had landed on the moon.",
    "There is a particular silence in a town after heavy snow. Cars stop, footsteps go soft, "
    "and the usual hum you never notice is suddenly missing. Children are the first to break "
    "it, usually with a sledge and a shriek.",
    "The ferry crossing takes ninety minutes, and the regulars know exactly where to sit: out "
    "of the wind on the left side going out, on the right side coming back, near the café but "
    "not so near that the queue spills into your lap.",
    "My first job was washing dishes in a hotel kitchen. The chef shouted at everyone equally, "
    "which felt almost fair, and on Fridays he made staff lunch from whatever was left over. "
    "It was the best food I ate all week.",
    "An old clock repairer once told me that most clocks stop because they are dirty, not "
    "broken. Oil gathers dust, dust becomes paste, and the paste stops the wheels. Clean it, "
    "oil it sparingly, and a hundred-year-old movement will run for another hundred.",
    "We planted the apple tree the year my daughter was born. For six years it gave nothing "
    "but leaves, and then one September it was so heavy with fruit that a branch split. We "
    "propped it up with a broom handle, and the broom handle is still there.",
    "The market opens before dawn. By the time the office workers arrive for coffee, the fish "
    "stalls are half sold and the flower sellers are already bargaining among themselves for "
    "what is left of the tulips.",
    "Learning to swim as an adult is humbling. Children leap in; grown-ups negotiate with the "
    "water, one rung of the ladder at a time. The instructor was patient and slightly amused, "
    "and by the sixth lesson I could cross the pool without touching the side.",
    "A good hardware shop is a museum that lets you touch the exhibits. Drawers of hinges, "
    "bins of nails sold by weight, a man behind the counter who asks what you are trying to "
    "do before he tells you what to buy.",
    "The river changed course in the flood, and the old ford is now a quiet pond full of "
    "reeds. Ducks nest where carts once crossed. On the map it is still marked as a road.",
    "Night shifts have their own society. The nurses, the bakers, the taxi drivers and the "
    "cleaners recognise each other at the all-night café, a loose club whose membership card "
    "is tiredness.",
    "I asked the mechanic how long the car would last. He looked at the rust, listened to the "
    "engine, and said it would last exactly as long as I kept paying him. He was joking, "
    "mostly.",
    "The lighthouse keeper's log for one winter records nothing but wind direction, ships "
    "sighted and the state of the lamp, in the same neat hand every night. On Christmas Eve "
    "the only extra line reads: Cocoa.",
    "Our street has a noticeboard by the post box. Lost cats, piano lessons, a sofa going "
    "free to anyone who can carry it, a choir looking for tenors. It is the most honest "
    "newspaper in town.",
    "Writing a letter by hand is slower than typing, and that is the point. You think before "
    "you commit a sentence to paper, and the person who receives it can see where you "
    "hesitated.",
    "Bread is mostly waiting. Mix, wait, fold, wait, shape, wait, bake. The hands do perhaps "
    "fifteen minutes of work in a day; the yeast does the rest while you get on with your life.",
    "In the archive there is a photograph of the harbour from before the breakwater was built: "
    "small boats pulled up on the shingle, nets drying on poles, a dog asleep in the "
    "foreground. Nobody knows whose dog it was.",
    "The simplest useful program I ever wrote renamed four thousand photographs by the date "
    "they were taken. It was twelve lines long and saved a week of clicking.",
    "A tuning fork struck and pressed against a wooden table suddenly sounds loud, because the "
    "table moves more air than the thin prongs can. It is the same reason a guitar has a body.",
]


# --- dialogues ------------------------------------------------------------------------------------

DIALOGUES: list[list[list[str]]] = [
    [  # a repair shop
        ["Morning. My bike's making a clicking noise when I pedal.",
         "Hi, can you look at my bicycle? It clicks every time I push down on the left pedal."],
        ["Does it click on every turn, or only when you're going uphill?",
         "Is it every revolution, or just when you put weight on it?"],
        ["Every turn, I think. Louder on hills.", "Mostly on hills. Sometimes on the flat too."],
        ["Sounds like the bottom bracket, or a loose pedal. Leave it with me for an hour?",
         "Probably the pedal thread. I can check it now if you have ten minutes."],
        ["Great, I'll grab a coffee and come back.", "Perfect, I'll wait."],
        ["It was the pedal. Cleaned and tightened, no charge.",
         "Loose crank bolt. Tightened it to spec; that'll be {n1} euros."],
    ],
    [  # booking a table
        ["Hello, I'd like to book a table for {n1} on {day} evening.",
         "Hi, do you have space for {n1} people this {day}?"],
        ["Let me check. We have {time} or a later slot at half past eight.",
         "We're busy that night, but I can offer {time}."],
        ["{time} is fine. Is there anything vegetarian on the menu?",
         "That works. One of us is gluten-free; is that a problem?"],
        ["Plenty. The kitchen can adapt most dishes if you tell the waiter.",
         "Not at all. Just mention it when you order and the chef will adjust."],
        ["Lovely. The name is {name}.", "Thanks. Put it under {name}, please."],
        ["Booked. See you on {day}.", "All set. We'll see you then."],
    ],
    [  # support chat
        ["Hi, the app logs me out every time I switch to another window.",
         "Hello, I keep getting signed out of the app after a few minutes."],
        ["Sorry about that. Which version are you on? It's under Settings, then About.",
         "Thanks for reporting it. Could you tell me the version number shown in Settings?"],
        ["It says {n1}.{n2}.{n1}.", "Version {n1}.{n1}.{n2}, installed last week."],
        ["That version had a bug with session tokens. An update went out yesterday.",
         "We fixed a logout bug in the release after that one; updating should solve it."],
        ["Updated. Let me try... yes, it stays logged in now.",
         "Done. It seems fine now, thank you."],
        ["Glad to hear it. Anything else I can help with?",
         "Great. I'll close the ticket, but reply here if it comes back."],
    ],
    [  # a doctor's appointment
        ["What seems to be the trouble?", "How can I help you today?"],
        ["My knee has been sore for about {n1} weeks, mostly going downstairs.",
         "I've had a pain in my knee since I started running again."],
        ["Any swelling, or a feeling that it might give way?",
         "Did you twist it, or did it come on gradually?"],
        ["A bit of swelling in the evenings, nothing else.", "Gradually. No fall or twist."],
        ["It sounds like overuse. Rest it for a fortnight, then build up slowly.",
         "Let's try some strengthening exercises first; I'll print a sheet for you."],
        ["And if it isn't better?", "How long before I can run again?"],
        ["Come back in a month and we'll arrange a scan.",
         "Start with short, flat runs after two weeks and stop if it hurts."],
    ],
    [  # code review
        ["I left a few comments on your pull request.",
         "Had a look at your branch. Mostly good, a couple of questions."],
        ["Thanks. Is the retry logic the problem?", "Sure. Is it the error handling?"],
        ["Partly. The loop retries forever if the server keeps returning 503.",
         "Yes: the timeout error is swallowed, so the caller never finds out."],
        ["Fair. I'll cap it at {n1} attempts with backoff.",
         "Good catch. I'll re-raise it with the request ID attached."],
        ["And a test that proves it stops?", "Could you add a test for that path as well?"],
        ["Will do. I'll push the changes before lunch.", "Already writing it."],
    ],
    [  # neighbours
        ["Is that your cat on my shed roof again?", "I think your cat has adopted my garden."],
        ["Probably. He thinks the whole street belongs to him.",
         "Sorry. He likes the sun on that side of the fence."],
        ["I don't mind, but he's been digging up the seedlings.",
         "He's welcome, apart from the flower beds."],
        ["I'll put some pepper down along the border, that usually keeps him off.",
         "I'll try to keep him in in the mornings while they get established."],
        ["Thanks. Come round for tea on {day}, by the way.",
         "Appreciated. We're having a barbecue on {day} if you'd like to come."],
    ],
    [  # a train journey
        ["Excuse me, is this seat free?", "Sorry, is anyone sitting here?"],
        ["Yes, go ahead. Are you going all the way to {town}?",
         "No, it's free. Where are you headed?"],
        ["Only as far as {town}. My sister lives there.", "{town}, for a job interview."],
        ["It's a lovely place. The bakery by the station is worth a stop.",
         "Good luck. The train usually gets in on time, at least."],
        ["I'll remember that, thanks.", "Thanks, I could use some luck."],
    ],
    [  # a classroom
        ["Who can tell me why the ice cube floats?", "Why does ice float on water?"],
        ["Because it's lighter?", "Because it has air in it?"],
        ["Close. It's less dense: the same mass takes up more room when water freezes.",
         "Not quite. Water expands when it freezes, so ice is less dense than the liquid."],
        ["So a litre of ice weighs less than a litre of water?",
         "Is that why pipes burst in winter?"],
        ["Exactly, about ten percent less.", "Exactly right. The expansion pushes on the pipe."],
    ],
    [  # at the library desk
        ["Hi, I'd like to renew these two books.", "Hello, I think I have a fine to pay."],
        ["Sure. One of them has a reservation, so I can only renew the other.",
         "Let me look. Yes, {n1} euros for the atlas; it came back a week late."],
        ["That's fine, I've nearly finished it anyway.", "Fair enough. Can I pay by card?"],
        ["Then it's due back on {day}. Anything else?", "Of course. The reader is just there."],
        ["No, that's all, thanks.", "Done. Sorry about the atlas."],
    ],
    [  # an estate agent
        ["I'm calling about the flat on the second floor in {town}.",
         "Is the house near the station still available?"],
        ["It is. Would you like to view it this week?",
         "It is, but there are already three viewings booked."],
        ["Yes please. Is {day} after work possible?", "Could I come before the others, then?"],
        ["{day} at {time} works. I'll send you the address.",
         "I can fit you in tomorrow at {time}, if that suits."],
        ["Perfect. Does the rent include heating?", "It does. Is parking included?"],
        ["Heating yes, electricity no.", "One space behind the building, yes."],
    ],
    [  # a lost parcel
        ["My parcel says delivered, but it isn't here.",
         "The tracking shows my parcel at the depot for a week now."],
        ["Sorry to hear that. Have you checked with your neighbours or a safe place?",
         "Apologies. Sometimes the scan is missed; let me ask the depot."],
        ["I've asked both sides of the street. Nothing.", "Thanks. I need it by {day}."],
        ["Then I'll open an investigation and send a replacement within {n1} days.",
         "They've found it. It goes out on the next van and should reach you tomorrow."],
        ["Thank you, that's a relief.", "Great, thanks for chasing it."],
    ],
    [  # a planning call
        ["Can we move the launch to next {day}?", "Is there any way to ship a week later?"],
        ["What's blocking us?", "Why, what's slipped?"],
        ["The payment integration failed testing twice.",
         "Two of the translations aren't back yet, and legal hasn't signed off."],
        ["Then we move it. I'd rather be late than broken.",
         "Can we launch without those and add them in a follow-up?"],
        ["I'll tell the customers today.", "Let me check with legal and get back to you."],
    ],
]


def dialogue(rng: random.Random) -> str | None:
    """One scenario, told along one of its two tracks (option 0 or 1 of every beat, so that
    each answer follows from its question), each track used once."""
    key = _take(rng, [f"{i}:{t}" for i in range(len(DIALOGUES)) for t in (0, 1)], cap=1)
    if key is None:
        return None
    index, track = (int(x) for x in key.split(":"))
    a, b = rng.sample(FIRST, 2)
    lines = []
    for i, options in enumerate(DIALOGUES[index]):
        speaker = a if i % 2 == 0 else b
        lines.append(f"{speaker}: {_fill(rng, options[track], {})}")
    return "\n".join(lines)


CHAT: list[tuple[str, str]] = [
    ("How do I remove a stripped screw?",
     "Press a wide rubber band between the screwdriver and the screw head, push firmly and "
     "turn slowly. If that fails, a screw extractor bit is cheap and works on most sizes."),
    ("What's the difference between baking soda and baking powder?",
     "Baking soda is pure sodium bicarbonate and needs an acid in the recipe to react. "
     "Baking powder already contains an acid, so it works with neutral ingredients."),
    ("Can you suggest a name for a small bakery?",
     "A few ideas: Crumb & Crust, The Rising Loaf, Second Proof, Flour Hour, or the "
     "street's name followed by 'Bakehouse'. Short names are easier to remember."),
    ("Summarise the plot of a heist film in two sentences.",
     "A retired safecracker is pulled back for one last job by a former partner. The "
     "plan goes wrong in every way except the one that matters, and the twist is that "
     "the partner planned it that way."),
    ("Why is the sky blue?",
     "Air molecules scatter short wavelengths of sunlight much more than long ones, so "
     "blue light reaches your eyes from every direction of the sky. At sunset the light "
     "crosses more air, the blue is scattered away, and reds and oranges remain."),
    ("Write a haiku about a kettle.",
     "Steel throat clears itself,\na small storm behind the spout,\nthen the quiet cup."),
    ("Is it safe to run a dishwasher overnight?",
     "Most manufacturers say yes, but a smoke alarm nearby and a closed kitchen door are "
     "sensible, and avoid it if the appliance has any fault history."),
    ("Give me three tips for a job interview.",
     "1. Research the organisation and mention something specific.\n2. Prepare two short "
     "stories that show how you solved a problem.\n3. Ask a real question at the end, "
     "about the team or the first three months."),
    ("Explain recursion to a ten-year-old.",
     "Imagine you want to know how many people are in a queue, but you can only talk to the "
     "person behind you. You ask them, they ask the next, and so on. The last person says "
     "'just me', and the answers add up on the way back to you."),
    ("What does a 404 error mean?",
     "The server was reached, but it has nothing at that address: the page was moved, "
     "deleted, or the link has a typo. It is not a problem with your connection."),
    ("How often should I water a cactus?",
     "In summer, when the soil has dried out completely, usually every two or three weeks. "
     "In winter, hardly at all: once a month or less. Overwatering kills more cacti than "
     "drought."),
    ("Translate 'where is the station?' into Spanish.",
     "¿Dónde está la estación? For a train station specifically you can also say la "
     "estación de tren."),
    ("What is a good way to learn to touch type?",
     "Practise ten to fifteen minutes a day with a typing tutor, keep your eyes on the "
     "screen, and favour accuracy over speed; speed follows once the fingers stop guessing."),
    ("Why does bread go stale?",
     "Mostly not by drying out: the starch in the crumb slowly recrystallises and firms up. "
     "That is why warming stale bread briefly in the oven softens it again."),
    ("Can you explain what a median is?",
     "Sort the numbers and take the middle one; with an even count, average the two middle "
     "ones. Unlike the mean, a single very large value barely moves it."),
    ("Suggest a short title for a talk about database indexes.",
     "'Finding Rows Faster', 'The Index You Forgot', or 'Why Is This Query Slow?'"),
    ("What should I pack for a day of hill walking?",
     "Water, food, a waterproof, a warm layer, a map and compass or charged phone, sun "
     "protection, and a small first-aid kit. Tell someone your route."),
    ("Is it better to rent or buy a piano for a beginner?",
     "Renting for the first six months is often wise: you find out whether practice sticks, "
     "and many shops put part of the rent towards a later purchase."),
    ("How do I politely decline a meeting?",
     "Thank them, say you can't attend, and offer an alternative: 'Thanks for the invite. I "
     "can't make Thursday, but I'm happy to read the notes or meet briefly next week.'"),
    ("Why do onions make you cry?",
     "Cutting them releases an enzyme that produces a volatile sulphur compound, which "
     "irritates the eyes. A sharp knife and a chilled onion reduce it."),
    ("What's the quickest way to cool a drink?",
     "Wrap the bottle in a wet paper towel and put it in the freezer, or submerge it in iced, "
     "salted water and stir: a few minutes instead of half an hour."),
    ("Can you give me an example of a regular expression for a date?",
     "For dates like 2024-03-15: ^\\d{4}-\\d{2}-\\d{2}$. It checks the shape only, not whether "
     "the month or day exists."),
    ("What is compound interest?",
     "Interest calculated on the original amount plus the interest already added. Over "
     "long periods it grows much faster than simple interest on the original sum alone."),
    ("How do I stop my glasses from fogging up?",
     "A drop of washing-up liquid rubbed on the lenses and polished off leaves a thin film "
     "that stops droplets forming. A mask that fits well over the nose helps too."),
]


def chat_turns(rng: random.Random) -> str:
    kind = rng.randrange(5)
    pair = _take(rng, [q for q, _ in CHAT], cap=1) if kind < 2 else None
    if pair is not None:
        q, a = pair, dict(CHAT)[pair]
    elif kind in (0, 1, 2):
        f = rng.randint(-4, 104)
        q = f"Convert {f} degrees Fahrenheit to Celsius."
        a = f"({f} - 32) x 5/9 = {(f - 32) * 5 / 9:.1f} degrees Celsius."
    elif kind == 3:
        km = rng.randint(3, 450)
        q = rng.choice(["How many miles is {k} km?", "What is {k} kilometres in miles?"])
        q = q.format(k=km)
        a = f"About {km / 1.609344:.1f} miles (1 mile = 1.609344 km)."
    else:
        nums = [rng.randint(1, 99) for _ in range(rng.randint(5, 9))]
        q = "What is the mean and median of " + ", ".join(map(str, nums)) + "?"
        srt = sorted(nums)
        mid = len(srt) // 2
        med = srt[mid] if len(srt) % 2 else (srt[mid - 1] + srt[mid]) / 2
        a = (
            f"Sorted: {', '.join(map(str, srt))}. Mean = {sum(nums)} / {len(nums)} = "
            f"{sum(nums) / len(nums):.2f}; median = {med:g}."
        )
    return f"User: {q}\nAssistant: {a}"


# --- instructions, lists, e-mails, FAQs -----------------------------------------------------------

HOWTOS: dict[str, list[list[str]]] = {
    "How to make a cold brew coffee": [
        ["Grind 80 g of coffee coarsely, like breadcrumbs.",
         "Use a coarse grind; fine coffee makes cold brew muddy."],
        ["Stir it into a litre of cold water in a jar.",
         "Add the grounds to one litre of cold water and stir."],
        ["Leave it in the fridge for 12 to 18 hours.",
         "Cover and steep in the fridge overnight, at least twelve hours."],
        ["Strain through a paper filter.", "Pour it through a fine sieve lined with a filter."],
        ["Dilute it one to one with water or milk to serve.",
         "Serve over ice, diluted to taste."],
    ],
    "How to back up a laptop": [
        ["Buy an external drive at least twice the size of the data you want to keep.",
         "Get an external disk with plenty of spare space."],
        ["Turn on the system's built-in backup tool and point it at the drive.",
         "Set up the operating system's backup program to use that disk."],
        ["Let the first backup run overnight.", "Expect the first run to take hours."],
        ["Keep a second copy somewhere else, such as an online service or a relative's house.",
         "Store one copy away from home, in case of fire or theft."],
        ["Once a month, restore one file to check that the backup actually works.",
         "Test a restore now and then; an unchecked backup is a hope, not a plan."],
    ],
    "How to clean a cast-iron pan": [
        ["Wash it while still warm with hot water and a brush.",
         "Scrub the warm pan under hot water; a little soap is fine."],
        ["Dry it completely on a low flame.", "Put it back on the hob for a minute to dry."],
        ["Rub a few drops of oil over the inside with kitchen paper.",
         "Wipe a thin film of oil over the cooking surface."],
        ["Store it somewhere dry, with a paper towel inside if stacked.",
         "Keep it in a dry cupboard, lid off."],
    ],
    "How to prepare for a long bike ride": [
        ["Check tyre pressure, brakes and chain the evening before.",
         "Pump the tyres and test both brakes the night before."],
        ["Plan the route with a café or shop every 30 to 40 km.",
         "Choose a route with places to refill water."],
        ["Eat a proper breakfast and carry snacks.", "Take food you can eat while riding."],
        ["Pack a spare tube, tyre levers, a pump and a multi-tool.",
         "Bring a repair kit and know how to use it."],
        ["Start slower than feels necessary.", "Ride the first hour gently."],
    ],
    "How to bleed a radiator": [
        ["Turn the heating off and let the radiators cool down.",
         "Switch off the central heating and wait until the radiator is cold."],
        ["Put a cloth under the bleed valve at the top corner.",
         "Hold an old towel beneath the small valve at the top of the radiator."],
        ["Turn the key a quarter turn anticlockwise until you hear air hiss.",
         "Open the valve slowly with a radiator key; air will start to escape."],
        ["Close the valve as soon as water appears.", "Tighten it again the moment water drips."],
        ["Check the boiler pressure and top it up if it has dropped below 1 bar.",
         "Look at the pressure gauge on the boiler; refill to about 1.5 bar if needed."],
    ],
    "How to start a sourdough starter": [
        ["Mix 50 g of wholemeal flour with 50 g of lukewarm water in a clean jar.",
         "Stir equal weights of flour and water together in a jar."],
        ["Cover loosely and leave it somewhere warm for a day.",
         "Leave the lid resting on top, not screwed down, at room temperature."],
        ["Discard half and feed it with fresh flour and water every day.",
         "Each morning, throw away half and add 50 g each of flour and water."],
        ["After five to ten days it should double within a few hours of feeding.",
         "It is ready when it rises reliably and smells pleasantly sour."],
    ],
    "How to change a flat tyre on a bicycle": [
        ["Shift to the smallest cog, open the brake and remove the wheel.",
         "Release the brake and take the wheel out of the frame."],
        ["Use tyre levers to lift one side of the tyre off the rim.",
         "Hook two levers under the tyre bead and work them around the rim."],
        ["Pull out the tube and find the hole by pumping it up and listening.",
         "Inflate the old tube slightly and listen for the leak."],
        ["Run your fingers carefully inside the tyre to find what caused the puncture.",
         "Check the inside of the tyre for glass or thorns before fitting a new tube."],
        ["Fit the new tube with a little air in it, then push the tyre back on by hand.",
         "Tuck the slightly inflated tube in and roll the tyre bead back over the rim."],
        ["Inflate to the pressure printed on the sidewall and refit the wheel.",
         "Pump to the recommended pressure, refit the wheel and close the brake."],
    ],
    "How to set up a new Python project": [
        ["Create a directory and a virtual environment: python3 -m venv .venv",
         "Make a folder for the project and run python3 -m venv .venv inside it."],
        ["Activate it with source .venv/bin/activate.",
         "Activate the environment so that pip installs into it."],
        ["Write a pyproject.toml with the project name, version and dependencies.",
         "Describe the package in pyproject.toml, including the Python versions you support."],
        ["Add a tests folder and install pytest.", "Install pytest and write one test first."],
        ["Initialise git and commit before writing much code.",
         "Run git init and make a first commit with the empty skeleton."],
    ],
    "How to write a clear bug report": [
        ["Say what you expected to happen and what happened instead.",
         "Describe the expected behaviour and the actual behaviour in one sentence each."],
        ["List the exact steps to reproduce it, starting from a fresh state.",
         "Write numbered steps that reproduce the problem every time."],
        ["Include versions: the program, the operating system, anything relevant.",
         "Add the version numbers of everything involved."],
        ["Attach the full error message, not a paraphrase.",
         "Paste the complete error output as text rather than a screenshot."],
        ["Mention anything you already tried.", "Note workarounds you found, if any."],
    ],
    "How to repot a house plant": [
        ["Water the plant the day before so the roots hold together.",
         "Give it a good drink a day ahead of repotting."],
        ["Choose a pot only a few centimetres wider than the old one.",
         "Pick a new pot one size up, with a drainage hole."],
        ["Ease the plant out and loosen the outer roots with your fingers.",
         "Tip it out gently and tease apart any circling roots."],
        ["Set it at the same depth in fresh compost and firm lightly.",
         "Fill around the root ball with new compost, keeping the original soil level."],
        ["Water well and keep it out of direct sun for a week.",
         "Water thoroughly and give it a few days of indirect light to recover."],
    ],
}


def howto(rng: random.Random) -> str | None:
    title = _take(rng, sorted(HOWTOS), cap=2)
    if title is None:
        return None
    steps = [rng.choice(options) for options in HOWTOS[title]]
    intro = rng.choice([
        "", "You will need about half an hour.", "This takes less time than it sounds.",
        "Read all the steps once before you start.", "No special tools are needed.",
    ])
    head = title + ("\n" + intro if intro else "")
    return head + "\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


LIST_ITEMS = {
    "Things to ask the landlord": [
        "who pays for the boiler service", "whether pets are allowed", "how the deposit is "
        "protected", "the notice period", "when the windows were last replaced", "which "
        "day the bins are collected", "whether we can put up shelves",
    ],
    "Ideas for the school fair": [
        "a cake stall", "guess the weight of the pumpkin", "second-hand book swap",
        "face painting", "a tombola", "plant sale from the school garden", "a quiz for "
        "parents", "coconut shy", "lemonade stand run by year six",
    ],
    "Shopping list": [
        "eggs", "oat milk", "two lemons", "basmati rice", "a bag of onions", "washing-up liquid",
        "bread flour", "tinned tomatoes", "coffee beans", "a cucumber", "yoghurt", "frozen peas",
        "batteries (AA)", "bin bags", "cheddar", "apples", "garlic", "olive oil",
    ],
    "Packing list for the weekend": [
        "rain jacket", "walking boots", "phone charger", "water bottle", "first-aid kit",
        "sun cream", "spare socks", "a paperback", "head torch", "snacks for the train",
        "tickets (printed)", "swimming things", "warm hat",
    ],
    "To do before Friday": [
        "renew the car insurance", "reply to the school about the trip", "book the dentist",
        "return the library books", "pay the window cleaner", "order a birthday present",
        "fix the gate latch", "send the invoice to the client", "back up the laptop",
        "water the neighbour's plants", "cancel the unused gym membership",
    ],
    "Release checklist": [
        "all tests green on the main branch", "changelog updated", "version number bumped",
        "migration tested on a copy of production", "rollback plan written down",
        "monitoring alerts checked", "support team briefed", "documentation published",
    ],
}


def bullet_list(rng: random.Random) -> str | None:
    title = _take(rng, sorted(LIST_ITEMS), cap=4)
    if title is None:
        return None
    items = rng.sample(LIST_ITEMS[title], rng.randint(4, min(8, len(LIST_ITEMS[title]))))
    mark = rng.choice(["- ", "* ", "[ ] "])
    return title + ":\n" + "\n".join(mark + item for item in items)


EMAIL_BODY = [
    "Thanks for sending the figures so quickly.",
    "I've attached the revised schedule; the only change is the delivery date.",
    "Could you confirm the room booking for {day} at {time}?",
    "The invoice for {month} is still outstanding, and I wanted to check it arrived.",
    "We're happy to go ahead on the terms in your last message.",
    "Unfortunately I can't make {day}; would the following week work instead?",
    "The samples arrived this morning, and two of them were damaged in transit.",
    "Please find the minutes of yesterday's meeting below.",
    "I spoke to {name} and we agreed to split the work between our teams.",
    "Let me know if anything in the draft is unclear.",
    "The new opening hours start on the first of {month}.",
    "Our order number is {n3}-{n2}, in case that helps.",
    "I'll be out of the office until {day}, with limited access to email.",
    "Could we move our call to {time}? Something has come up in the morning.",
    "The contractor expects to finish the roof within {n1} working days.",
    "I've copied {name}, who will handle the paperwork from our side.",
    "The delivery is booked for {day} between {time} and midday.",
    "We noticed a small error on page {n1} of the report; the corrected version is attached.",
    "Thank you for your patience while we sorted out the problem with the account.",
    "Parking is available behind the building; the entrance is on the side street.",
    "Could you send the updated price list before the end of {month}?",
    "I'm sorry for the slow reply; last week was busier than expected.",
    "We'd like to order {n2} more units on the same terms as before.",
]


def email(rng: random.Random) -> str | None:
    to, sender = rng.choice(FIRST), _name(rng)
    subject = rng.choice([
        "Re: schedule for next week", "Invoice query", "Meeting on {day}", "Quick question",
        "Follow-up from our call", "Order {n3}", "Change of plans", "Draft for review",
    ])
    picked: list[str] = []
    for _ in range(rng.randint(2, 4)):
        line = _take(rng, [b for b in EMAIL_BODY if b not in picked], cap=4)
        if line is None:
            return None
        picked.append(line)
    body = " ".join(_fill(rng, line, {}) for line in picked)
    greet = rng.choice(["Hi", "Dear", "Hello", "Good morning"])
    close = rng.choice(["Best regards", "Thanks", "Kind regards", "All the best", "Cheers"])
    return (
        f"Subject: {_fill(rng, subject, {})}\n\n{greet} {to},\n\n{body}\n\n{close},\n{sender}"
    )


FAQ = [
    ("Can I change my delivery address after ordering?",
     "Yes, as long as the order has not been dispatched. Open the order in your account and "
     "choose Edit address, or reply to the confirmation email."),
    ("How long does a refund take?",
     "Refunds are issued within {n1} working days of the item reaching us; your bank may take "
     "a few more days to show it."),
    ("Is the venue accessible by wheelchair?",
     "The main hall and the toilets on the ground floor are step-free. The gallery is reached "
     "by stairs only."),
    ("Do you offer student discounts?",
     "Students get {pct} percent off with a valid card, except on items already reduced."),
    ("What happens if it rains?",
     "The event goes ahead in the marquee. Only a storm warning would postpone it, and we would "
     "email everyone by {time} on the day."),
    ("Can I bring my dog?", "Dogs on leads are welcome outside; only assistance dogs indoors."),
    ("Can I cancel a booking?",
     "Bookings can be cancelled free of charge up to {n2} hours before the start time."),
    ("Are there lockers?", "Yes, coin-operated lockers by the entrance; bring a padlock "
     "for the changing rooms."),
    ("Do you deliver on weekends?", "Saturday deliveries are available in most areas for a "
     "small fee. We do not deliver on Sundays."),
    ("Where can I park?",
     "The car park behind the library is free after six. Spaces on the street are limited to "
     "two hours."),
    ("How do I reset my password?",
     "Use the 'Forgot password' link on the sign-in page. The reset link expires after "
     "{n2} minutes."),
]


def faq(rng: random.Random) -> str | None:
    questions: list[str] = []
    for _ in range(rng.randint(2, 4)):
        q = _take(rng, [q for q, _ in FAQ if q not in questions], cap=2)
        if q is None:
            return None
        questions.append(q)
    pairs = [(q, dict(FAQ)[q]) for q in questions]
    return "Frequently asked questions\n\n" + "\n\n".join(
        f"Q: {q}\nA: {_fill(rng, a, {})}" for q, a in pairs
    )


ASK_CHANGE = ["How much change is given?", "How much does the shop give back?",
              "What change should the cashier hand over?"]
VEHICLES = ["A train", "A coach", "A delivery van", "A ferry", "A cyclist on an e-bike"]
ASK_DISTANCE = ["How far does it go?", "What distance does it cover?",
                "How many kilometres is that?"]
GOODS = ["A coat", "A pair of boots", "A bicycle helmet", "A winter duvet", "A rucksack"]
ASK_PRICE = ["What is the new price?", "What does it cost now?", "What is the sale price?"]
RECTS = ["A rectangular garden", "A school playground", "A car park", "A vegetable bed",
         "A classroom floor"]
ASK_RECT = ["What are its area and perimeter?", "Find the area and the perimeter.",
            "How big is it, and how long is the fence around it?"]
SHOWS = ["A film", "A concert", "A football match", "A school play", "An evening lecture"]
ASK_END = ["When does it end?", "At what time does it finish?", "When will it be over?"]


def word_problem(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        price, n, paid = rng.randint(2, 19), rng.randint(2, 9), 0
        paid = (price * n // 20 + 1) * 20
        return (
            f"Question: {rng.choice(FIRST)} buys {n} notebooks at {price} euros each and pays "
            f"with {paid} euros. {rng.choice(ASK_CHANGE)}\nAnswer: {n} x {price} = "
            f"{n * price}; {paid} - {n * price} = {paid - n * price} euros."
        )
    if kind == 1:
        speed, hours = rng.randint(40, 110), rng.randint(2, 6)
        return (
            f"Question: {rng.choice(VEHICLES)} travels at {speed} km/h for {hours} hours. "
            f"{rng.choice(ASK_DISTANCE)}\nAnswer: {speed} x {hours} = {speed * hours} km."
        )
    if kind == 2:
        total, pct = rng.randint(8, 60) * 10, rng.choice([10, 15, 20, 25, 30, 40])
        return (
            f"Question: {rng.choice(GOODS)} costs {total} euros and is reduced by {pct}%. "
            f"{rng.choice(ASK_PRICE)}\nAnswer: {pct}% of {total} is {total * pct // 100}; "
            f"{total} - {total * pct // 100} = {total - total * pct // 100} euros."
        )
    if kind == 3:
        w, h = rng.randint(3, 14), rng.randint(2, 9)
        return (
            f"Question: {rng.choice(RECTS)} is {w} m long and {h} m wide. "
            f"{rng.choice(ASK_RECT)}\nAnswer: area {w} x {h} = {w * h} m2; perimeter "
            f"2 x ({w} + {h}) = {2 * (w + h)} m."
        )
    if kind == 4:
        a, b = rng.randint(12, 99), rng.randint(12, 99)
        return f"Question: What is {a} x {b}?\nAnswer: {a * b}."
    start_h, dur = rng.randint(6, 20), rng.randint(35, 170)
    end = start_h * 60 + dur
    return (
        f"Question: {rng.choice(SHOWS)} starts at {start_h}:00 and lasts {dur} minutes. "
        f"{rng.choice(ASK_END)}\n"
        f"Answer: {dur} minutes is {dur // 60} h {dur % 60} min, so it ends at "
        f"{end // 60 % 24}:{end % 60:02d}."
    )


# --- code -----------------------------------------------------------------------------------------

NOUNS = ["order", "reading", "sample", "invoice", "sensor", "user", "ticket", "track", "batch",
         "record", "parcel", "booking", "metric", "job", "event", "frame"]
FIELDS = ["id", "name", "created_at", "total", "status", "count", "price", "weight", "score",
          "city", "email", "duration", "label", "quantity"]


def _ident(rng: random.Random) -> tuple[str, str]:
    noun = rng.choice(NOUNS)
    return noun, noun[0].upper() + noun[1:]


def _two_fields(rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(FIELDS, 2)
    return a, b


def py_moving_average(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    w = rng.randint(3, 12)
    return (
        f"def moving_average(values, window={w}):\n"
        f'    """Average of each run of {w} consecutive {noun} values."""\n'
        "    if window <= 0:\n"
        '        raise ValueError("window must be positive")\n'
        "    out, total = [], 0.0\n"
        "    for i, v in enumerate(values):\n"
        "        total += v\n"
        "        if i >= window:\n"
        "            total -= values[i - window]\n"
        "        if i >= window - 1:\n"
        "            out.append(total / window)\n"
        "    return out"
    )


def py_dataclass(rng: random.Random) -> str:
    _, cls = _ident(rng)
    a, b = _two_fields(rng)
    return (
        "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\n"
        f"class {cls}:\n    {a}: str\n    {b}: float = 0.0\n\n"
        f'    def scaled(self, factor: float) -> "{cls}":\n'
        f"        return {cls}(self.{a}, self.{b} * factor)"
    )


def py_csv(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    a, b = _two_fields(rng)
    return (
        f"import csv\n\n\ndef load_{noun}s(path, minimum={rng.randint(1, 50)}):\n"
        '    with open(path, newline="") as f:\n'
        "        rows = list(csv.DictReader(f))\n"
        f'    return [r for r in rows if r["{a}"] and float(r["{b}"]) >= minimum]'
    )


def py_counts(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    a = rng.choice(FIELDS)
    return (
        f"counts = {{}}\nfor {noun} in {noun}s:\n"
        f"    key = {noun}.{a}\n    counts[key] = counts.get(key, 0) + 1\n"
        f"top = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)[:{rng.randint(3, 20)}]"
        "\nfor key, n in top:\n    print(f\"{key:<20} {n:>6}\")"
    )


def py_bisect(rng: random.Random) -> str:
    return (
        "def find_first_at_least(items, target):\n"
        '    """Index of the first item >= target in a sorted list (len(items) if none)."""\n'
        "    lo, hi = 0, len(items)\n"
        "    while lo < hi:\n"
        "        mid = (lo + hi) // 2\n"
        "        if items[mid] < target:\n"
        "            lo = mid + 1\n"
        "        else:\n"
        "            hi = mid\n"
        f"    return lo\n\n\nassert find_first_at_least([1, 3, 5, 7], {rng.randint(2, 6)}) in "
        "range(5)"
    )


def py_retry(rng: random.Random) -> str:
    n, delay = rng.randint(2, 6), rng.choice([0.1, 0.25, 0.5, 1.0])
    return (
        "import functools\nimport time\n\n\n"
        f"def retry(attempts={n}, delay={delay}, exceptions=(OSError,)):\n"
        "    def wrap(fn):\n"
        "        @functools.wraps(fn)\n"
        "        def inner(*args, **kwargs):\n"
        "            for i in range(attempts):\n"
        "                try:\n"
        "                    return fn(*args, **kwargs)\n"
        "                except exceptions:\n"
        "                    if i == attempts - 1:\n"
        "                        raise\n"
        "                    time.sleep(delay * 2**i)\n"
        "        return inner\n"
        "    return wrap"
    )


def py_words(rng: random.Random) -> str:
    k = rng.randint(5, 25)
    return (
        "import re\nimport sys\nfrom collections import Counter\n\n"
        "text = open(sys.argv[1], encoding=\"utf-8\").read().lower()\n"
        "words = re.findall(r\"[a-z']+\", text)\n"
        f"for word, n in Counter(words).most_common({k}):\n"
        "    print(n, word)"
    )


def py_timer(rng: random.Random) -> str:
    label = rng.choice(["load", "parse", "render", "upload", "query", "resize"])
    return (
        "import contextlib\nimport time\n\n\n@contextlib.contextmanager\n"
        "def timed(label):\n"
        "    start = time.perf_counter()\n"
        "    try:\n"
        "        yield\n"
        "    finally:\n"
        "        print(f\"{label}: {time.perf_counter() - start:.3f} s\")\n\n\n"
        f"with timed(\"{label}\"):\n    {label}_all()"
    )


def py_rename(rng: random.Random) -> str:
    ext = rng.choice(["jpg", "png", "heic", "mp4"])
    return (
        "from datetime import datetime\nfrom pathlib import Path\n\n"
        f'for path in sorted(Path("{rng.choice(["photos", "camera", "inbox", "scans"])}")'
        f'.glob("*.{ext}")):\n'
        "    stamp = datetime.fromtimestamp(path.stat().st_mtime)\n"
        f'    target = path.with_name(stamp.strftime("%Y-%m-%d_%H%M%S") + ".{ext}")\n'
        "    if not target.exists():\n"
        "        path.rename(target)"
    )


def js_fetch(rng: random.Random) -> str:
    noun, cls = _ident(rng)
    return (
        f"async function fetch{cls}(id) {{\n"
        f"  const res = await fetch(`/api/{noun}s/${{id}}`);\n"
        f"  if (!res.ok) throw new Error(`{noun} ${{id}}: HTTP ${{res.status}}`);\n"
        "  return res.json();\n}"
    )


def js_debounce(rng: random.Random) -> str:
    return (
        f"function debounce(fn, wait = {rng.choice([150, 250, 300, 500, 1000])}) {{\n"
        "  let timer;\n  return (...args) => {\n    clearTimeout(timer);\n"
        "    timer = setTimeout(() => fn(...args), wait);\n  };\n}"
    )


def ts_total(rng: random.Random) -> str:
    _, cls = _ident(rng)
    a, b = _two_fields(rng)
    return (
        f"interface {cls} {{\n  {a}: string;\n  {b}: number;\n}}\n\n"
        f"export function total{cls}s(items: {cls}[]): number {{\n"
        f"  return items.reduce((sum, item) => sum + item.{b}, 0);\n}}"
    )


def js_group(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    a = rng.choice(FIELDS)
    return (
        f"const by{a[0].upper() + a[1:].replace('_', '')} = {noun}s.reduce((acc, x) => {{\n"
        f"  (acc[x.{a}] ??= []).push(x);\n  return acc;\n}}, {{}});\n"
        f"console.log(Object.keys(by{a[0].upper() + a[1:].replace('_', '')}).length);"
    )


def js_toggle(rng: random.Random) -> str:
    cls = rng.choice(["open", "active", "hidden", "dark", "expanded"])
    return (
        f'document.querySelector("#{rng.choice(["menu", "panel", "sidebar", "theme"])}-button")\n'
        '  .addEventListener("click", (event) => {\n'
        f'    document.body.classList.toggle("{cls}");\n'
        "    event.preventDefault();\n  });"
    )


def rust_struct(rng: random.Random) -> str:
    _, cls = _ident(rng)
    a, b = _two_fields(rng)
    return (
        f"#[derive(Debug, Clone)]\npub struct {cls} {{\n    pub {a}: String,\n"
        f"    pub {b}: u32,\n}}\n\nimpl {cls} {{\n"
        f"    pub fn is_large(&self) -> bool {{\n        self.{b} > {rng.randint(2, 64)}\n"
        "    }\n}"
    )


def rust_parse(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    sep = rng.choice([",", ";", "=", ":"])
    return (
        f"fn parse_{noun}(line: &str) -> Option<(String, f64)> {{\n"
        f"    let mut parts = line.splitn(2, '{sep}');\n"
        "    let key = parts.next()?.trim().to_string();\n"
        "    let value = parts.next()?.trim().parse().ok()?;\n    Some((key, value))\n}"
    )


def rust_enum(rng: random.Random) -> str:
    states = rng.sample(["Pending", "Active", "Paused", "Failed", "Done", "Cancelled"], 3)
    return (
        "enum State {\n" + "".join(f"    {s},\n" for s in states) + "}\n\n"
        "fn describe(s: &State) -> &'static str {\n    match s {\n"
        + "".join(f'        State::{s} => "{s.lower()}",\n' for s in states)
        + "    }\n}"
    )


def go_handler(rng: random.Random) -> str:
    noun, cls = _ident(rng)
    return (
        f"func handle{cls}(w http.ResponseWriter, r *http.Request) {{\n"
        "\tif r.Method != http.MethodGet {\n"
        '\t\thttp.Error(w, "method not allowed", http.StatusMethodNotAllowed)\n\t\treturn\n\t}\n'
        '\tw.Header().Set("Content-Type", "application/json")\n'
        f'\tfmt.Fprintf(w, `{{"{noun}": %q}}`, r.URL.Query().Get("id"))\n}}'
    )


def go_workers(rng: random.Random) -> str:
    n = rng.randint(2, 16)
    return (
        f"jobs := make(chan int)\nresults := make(chan int)\nfor w := 0; w < {n}; w++ {{\n"
        "\tgo func() {\n\t\tfor j := range jobs {\n\t\t\tresults <- j * j\n\t\t}\n\t}()\n}\n"
        f"go func() {{\n\tfor i := 0; i < {rng.randint(10, 500)}; i++ {{\n\t\tjobs <- i\n\t}}\n"
        "\tclose(jobs)\n}()"
    )


def c_squares(rng: random.Random) -> str:
    n = rng.randint(4, 40)
    return (
        "#include <stdio.h>\n\nint main(void) {\n    int sum = 0;\n"
        f"    for (int i = 1; i <= {n}; i++) {{\n        sum += i * i;\n    }}\n"
        f'    printf("sum of squares 1..{n} = %d\\n", sum);  /* '
        f"{n * (n + 1) * (2 * n + 1) // 6} */\n    return 0;\n}}"
    )


def c_reverse(rng: random.Random) -> str:
    word = rng.choice(["kvscale", "harbour", "lantern", "meadow", "teapot", "signal"])
    return (
        "#include <string.h>\n\nvoid reverse(char *s) {\n    size_t n = strlen(s);\n"
        "    for (size_t i = 0; i < n / 2; i++) {\n        char t = s[i];\n"
        "        s[i] = s[n - 1 - i];\n        s[n - 1 - i] = t;\n    }\n}\n"
        f'/* reverse("{word}") gives "{word[::-1]}" */'
    )


def sql_group(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    a = rng.choice(["city", "status", "label", "name"])
    b = rng.choice(["total", "price", "weight", "score", "duration", "quantity"])
    return (
        f"SELECT {a}, COUNT(*) AS n, AVG({b}) AS mean_{b}\nFROM {noun}s\n"
        f"WHERE created_at >= DATE '{rng.randint(2019, 2024)}-{rng.randint(1, 12):02d}-01'\n"
        f"GROUP BY {a}\nHAVING COUNT(*) > {rng.randint(2, 50)}\nORDER BY n DESC;"
    )


def sql_join(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    return (
        f"SELECT u.name, COUNT(x.id) AS {noun}s\nFROM users AS u\n"
        f"LEFT JOIN {noun}s AS x ON x.user_id = u.id\n"
        f"WHERE u.city = '{rng.choice(TOWNS)}'\nGROUP BY u.name\nORDER BY {noun}s DESC\n"
        f"LIMIT {rng.randint(5, 50)};"
    )


def sql_create(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    a, b = _two_fields(rng)
    return (
        f"CREATE TABLE {noun}s (\n    id BIGINT PRIMARY KEY,\n    {a} TEXT NOT NULL,\n"
        f"    {b} NUMERIC({rng.randint(6, 12)}, 2),\n"
        "    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP\n);\n"
        f"CREATE INDEX {noun}s_{a}_idx ON {noun}s ({a});"
    )


def sh_cleanup(rng: random.Random) -> str:
    days, ext = rng.randint(3, 30), rng.choice(["log", "tmp", "csv", "bak"])
    return (
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        f"# delete .{ext} files older than {days} days, then report disk usage\n"
        f'find "${{1:-.}}" -name "*.{ext}" -mtime +{days} -print -delete\n'
        'du -sh "${1:-.}"'
    )


def sh_loop(rng: random.Random) -> str:
    src, dst = rng.choice([("wav", "flac"), ("png", "webp"), ("md", "html"), ("txt", "gz")])
    return (
        f"for f in *.{src}; do\n"
        f'  out="${{f%.{src}}}.{dst}"\n'
        '  [ -e "$out" ] && continue\n'
        f'  echo "converting $f"\n  convert-tool "$f" "$out" || echo "failed: $f" >&2\ndone'
    )


def yaml_config(rng: random.Random) -> str:
    service = rng.choice(["api", "worker", "scheduler", "search", "billing"])
    return (
        f"service: {service}\nport: {rng.choice([8080, 8000, 9090, 3000])}\n"
        f"workers: {rng.randint(1, 16)}\nlog_level: {rng.choice(['info', 'debug', 'warning'])}\n"
        f"database:\n  host: db.internal\n  pool_size: {rng.randint(4, 40)}\n"
        f"  timeout_s: {rng.randint(2, 30)}\nfeatures:\n"
        + "".join(f"  - {x}\n" for x in rng.sample(
            ["rate_limits", "audit_log", "dark_mode", "exports", "webhooks", "sso"], 3))
    ).rstrip()


CODE_VARIANTS: dict[str, tuple[str, Callable[[random.Random], str]]] = {
    "py_moving_average": ("python", py_moving_average),
    "py_dataclass": ("python", py_dataclass),
    "py_csv": ("python", py_csv),
    "py_counts": ("python", py_counts),
    "py_bisect": ("python", py_bisect),
    "py_retry": ("python", py_retry),
    "py_words": ("python", py_words),
    "py_timer": ("python", py_timer),
    "py_rename": ("python", py_rename),
    "js_fetch": ("javascript", js_fetch),
    "js_debounce": ("javascript", js_debounce),
    "js_group": ("javascript", js_group),
    "js_toggle": ("javascript", js_toggle),
    "ts_total": ("typescript", ts_total),
    "rust_struct": ("rust", rust_struct),
    "rust_parse": ("rust", rust_parse),
    "rust_enum": ("rust", rust_enum),
    "go_handler": ("go", go_handler),
    "go_workers": ("go", go_workers),
    "c_squares": ("c", c_squares),
    "c_reverse": ("c", c_reverse),
    "sql_group": ("sql", sql_group),
    "sql_join": ("sql", sql_join),
    "sql_create": ("sql", sql_create),
    "sh_cleanup": ("bash", sh_cleanup),
    "sh_loop": ("bash", sh_loop),
    "yaml_config": ("yaml", yaml_config),
}
LANG_NAMES = {"python": "Python", "javascript": "JavaScript", "typescript": "TypeScript",
              "rust": "Rust", "go": "Go", "c": "C", "sql": "SQL", "bash": "shell",
              "yaml": "YAML"}
CODE_INTROS = [
    "Here is a small {lang} example.", "A minimal {lang} version looks like this:",
    "The following {lang} snippet does the job:", "For reference, the {lang} we ended up with:",
    "Something like this should work ({lang}):", "In {lang} it comes down to a few lines:",
    "{name} posted this {lang} in the team chat:", "The fix, in {lang}:",
    "Untested, but roughly ({lang}):", "From the {noun} service ({lang}):",
    "A reviewer suggested this {lang} instead:", "Quick {lang} sketch for the {noun} case:",
]


def code_block(rng: random.Random) -> str | None:
    key = _take(rng, sorted(CODE_VARIANTS), cap=4)
    if key is None:
        return None
    lang, make = CODE_VARIANTS[key]
    intro = rng.choice(CODE_INTROS).format(
        lang=LANG_NAMES[lang], name=rng.choice(FIRST), noun=rng.choice(NOUNS)
    )
    return f"{intro}\n```{lang}\n{make(rng)}\n```"

# --- tables, JSON, logs ---------------------------------------------------------------------------


def table_markdown(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        towns = rng.sample(TOWNS, 4)
        months = MONTHS[rng.randrange(0, 9):][:4]
        base = [rng.uniform(-2, 14) for _ in towns]
        rows = ["| Town | " + " | ".join(m[:3] for m in months) + " |",
                "|---" * (len(months) + 1) + "|"]
        for t, b in zip(towns, base, strict=True):
            vals = [b + i * rng.uniform(1.0, 3.5) for i in range(len(months))]
            rows.append(f"| {t} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
        title = f"Mean daily temperature (degrees C), {months[0]} to {months[-1]}"
        return title + "\n\n" + "\n".join(rows)
    if kind == 1:
        items = rng.sample(["Notebooks", "Pens", "Folders", "Staplers", "Paper (A4)", "Labels",
                            "Envelopes", "Markers"], 4)
        rows = ["| Item | Q1 | Q2 | Q3 | Q4 | Total |", "|---|---:|---:|---:|---:|---:|"]
        grand = 0
        for item in items:
            q = [rng.randint(40, 900) for _ in range(4)]
            grand += sum(q)
            rows.append(f"| {item} | " + " | ".join(map(str, q)) + f" | {sum(q)} |")
        rows.append(f"| **All** | | | | | {grand} |")
        title = f"Units sold per quarter, {rng.choice(TOWNS)} branch, {rng.randint(2015, 2024)}"
        return title + "\n\n" + "\n".join(rows)
    rows = ["| Run | Batch | Tokens/s | Loss |", "|---:|---:|---:|---:|"]
    loss = rng.uniform(2.5, 4.0)
    for run in range(1, rng.randint(4, 8)):
        loss *= rng.uniform(0.9, 0.99)
        rows.append(
            f"| {run} | {rng.choice([8, 16, 32, 64])} | {rng.randint(1800, 9500)} | {loss:.3f} |"
        )
    return f"Training runs for the {rng.choice(NOUNS)} model\n\n" + "\n".join(rows)


def table_csv(rng: random.Random) -> str:
    lines = ["date,station,temp_c,humidity_pct,rain_mm"]
    station = rng.choice(TOWNS).lower().replace(" ", "_")
    day, temp = rng.randint(1, 20), rng.uniform(4, 18)
    month = rng.randint(1, 12)
    for i in range(rng.randint(5, 9)):
        temp += rng.uniform(-2.0, 2.0)
        rain = max(0.0, rng.uniform(-3, 12))
        lines.append(
            f"2024-{month:02d}-{day + i:02d},{station},{temp:.1f},{rng.randint(45, 98)},{rain:.1f}"
        )
    return "\n".join(lines)


def json_snippet(rng: random.Random) -> str:
    noun, _ = _ident(rng)
    item = {
        "id": rng.randint(1000, 99999),
        "type": noun,
        "owner": _name(rng),
        "city": rng.choice(TOWNS),
        "tags": rng.sample(["urgent", "draft", "paid", "archived", "review", "new"], 2),
        "amount": round(rng.uniform(3, 900), 2),
    }
    parts = []
    for k, v in item.items():
        if isinstance(v, str):
            parts.append(f'  "{k}": "{v}"')
        elif isinstance(v, list):
            parts.append(f'  "{k}": [' + ", ".join(f'"{x}"' for x in v) + "]")
        else:
            parts.append(f'  "{k}": {v}')
    return "```json\n{\n" + ",\n".join(parts) + "\n}\n```"


def log_excerpt(rng: random.Random) -> str:
    h, m, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    service = rng.choice(["api", "worker", "scheduler", "billing", "search", "gateway"])
    events = [
        "INFO  started, listening on port {port}",
        "INFO  connected to database in {ms} ms",
        "WARN  slow request GET /v1/{noun}s took {ms} ms",
        "INFO  processed {n} {noun}s",
        "ERROR timeout talking to upstream after {ms} ms (attempt {k} of 3)",
        "INFO  cache hit ratio {pct}%",
        "WARN  queue depth {n} above threshold",
        "INFO  shutdown requested, draining connections",
    ]
    lines = []
    for _ in range(rng.randint(4, 7)):
        s += rng.randint(0, 40)
        m, s = m + s // 60, s % 60
        h, m = (h + m // 60) % 24, m % 60
        text = rng.choice(events).format(
            port=rng.choice([8080, 5432, 9000]), ms=rng.randint(3, 4800), n=rng.randint(2, 5000),
            noun=rng.choice(NOUNS), k=rng.randint(1, 3), pct=rng.randint(40, 99),
        )
        lines.append(f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                     f"{h:02d}:{m:02d}:{s:02d} {service} {text}")
    return "\n".join(lines)


# --- assembly -------------------------------------------------------------------------------------

BLOCKS: list[tuple[float, Callable[[random.Random], str | None]]] = [
    (30.0, topic_paragraph),
    (6.0, news_brief),
    (6.0, story),
    (3.0, review),
    (2.0, sports_report),
    (0.6, league_table),
    (1.0, recipe),
    (2.0, diary),
    (0.8, timetable),
    (5.0, dialogue),
    (4.0, chat_turns),
    (2.0, howto),
    (1.5, bullet_list),
    (3.0, email),
    (1.0, faq),
    (3.0, word_problem),
    (7.0, code_block),
    (2.0, table_markdown),
    (1.2, table_csv),
    (1.2, json_snippet),
    (2.0, log_excerpt),
]


def compose(seed: int = SEED, target: int = TARGET_BYTES) -> str:
    rng = random.Random(seed)
    USES.clear()
    passages = list(PASSAGES)
    rng.shuffle(passages)
    makers = [m for _, m in BLOCKS]
    weights = [w for w, _ in BLOCKS]
    seen: set[str] = set()
    out: list[str] = []
    size = 0
    every = max(1, round(target / 320 / (len(passages) + 1)))  # spread the passages evenly
    while size < target:
        if passages and len(out) % every == every - 1:
            block = passages.pop()
        else:
            i = rng.choices(range(len(makers)), weights)[0]
            made = makers[i](rng)
            if made is None:  # that kind is used up: drop it
                del makers[i], weights[i]
                continue
            block = made
        if block in seen:  # never the same block twice
            continue
        seen.add(block)
        out.append(block)
        size += len(block.encode("utf-8")) + 2
    return "\n\n".join(out) + "\n"


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def stats(text: str) -> dict[str, int]:
    """Counts for the README. A sentence: prose outside code blocks and table rows, split after
    . ! ? and at line ends, of at least four words."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    pieces = (p.strip() for p in _SENTENCE.split(prose))
    sentences = [p for p in pieces if len(p.split()) >= 4 and not p.startswith("|")]
    return {
        "bytes": len(text.encode("utf-8")),
        "lines": text.count("\n"),
        "blocks": text.count("\n\n") + 1,
        "code_blocks": text.count("```") // 2,
        "sentences": len(sentences),
        "distinct_sentences": len(set(sentences)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from a new run")
    ap.add_argument("--stats", action="store_true", help="print size and sentence counts")
    args = ap.parse_args(argv)
    text = compose()
    if args.check:
        ok = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'up to date' if ok else 'DIFFERS from make_text.py output'}")
        return 0 if ok else 1
    if args.stats:
        for key, value in stats(text).items():
            print(f"{key:>20}: {value:,}")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({len(text.encode('utf-8')):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
