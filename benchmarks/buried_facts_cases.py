"""Cases for benchmarks/buried_facts.py: one fact buried in a long note about something else,
with short notes that share the query's topic but not its answer (issue 20: "a sentence inside
a long note can't be found").

Each case: a long note (about 200 tokens on one topic, with one sentence of another), a query
that asks for that sentence, and the id of the note that answers. The distractors are one-line
notes near the query's topic that do not answer it. Written by hand.
"""

from __future__ import annotations

COMPOST = (
    "Compost notes for the allotment. Keep the heap about one metre across so it heats up. "
    "Mix green material such as grass cuttings and vegetable peelings with brown material "
    "such as dry leaves, straw and shredded cardboard, roughly one part green to two parts "
    "brown. Turn the heap every two weeks with a fork to let air in, and water it in dry "
    "spells until it feels like a wrung-out sponge. Avoid meat, dairy and cooked food, which "
    "attract rats. Eggshells are fine if crushed. Woody stems break down slowly, so chop "
    "them first. {fact} After about six months the bottom of the heap turns dark and "
    "crumbly and smells of earth; sieve it and spread it on the beds in early spring. A "
    "second bin lets one heap mature while the other is filled. Comfrey leaves speed things "
    "up, and a layer of old carpet on top keeps the warmth in over winter."
)
CAR = (
    "Notes on the car. The tyres were rotated in March and the pressure should be 2.3 bar at "
    "the front and 2.1 at the back. The next service is due at 60,000 km, and the garage "
    "recommends new brake pads then. The windscreen wipers squeak when dry; the spare blades "
    "are in the boot under the floor panel. {fact} The insurance renews in October, and the "
    "breakdown cover includes a courtesy car for three days. Oil is 5W-30, and the dashboard "
    "light for low coolant comes on in cold weather even when the level is fine, which the "
    "mechanic says is a faulty sensor. Fuel economy drops in winter to about seven litres "
    "per hundred kilometres. Keep the parking disc in the glovebox for the town centre."
)
RECIPES = (
    "Weekday dinners. Lentil soup: soften onion, carrot and celery, add red lentils, stock "
    "and cumin, simmer twenty minutes and blend half. Tray bake: chicken thighs, peppers and "
    "red onion with smoked paprika at 200 degrees for forty minutes. Pasta with broccoli, "
    "garlic, chilli and lemon zest, finished with the pasta water. {fact} Fried rice works "
    "best with day-old rice, a hot pan and soy sauce added at the end. Shakshuka: tomatoes, "
    "peppers and spices, then eggs poached in the sauce with the lid on. Keep frozen peas, "
    "tinned tomatoes and chickpeas in stock, and cook a double batch of chilli on Sundays so "
    "that Thursday needs no cooking at all."
)
WORK = (
    "Project handover notes. The nightly export job runs at 02:00 and writes to the shared "
    "bucket; if it fails, rerun it from the scheduler with the same date. The staging "
    "database is refreshed from production every Monday, with personal data masked. "
    "Deployments go out on Tuesdays and Thursdays after the tests pass, and a rollback is one "
    "click in the pipeline. {fact} The monitoring dashboard alerts the on-call phone when "
    "the error rate passes two percent for five minutes. Logs are kept for thirty days. The "
    "API keys rotate every quarter and live in the secrets manager, never in the repository. "
    "Questions about billing go to the finance team, not to engineering."
)
GARDEN = (
    "Garden plan for the year. The raised beds rotate: potatoes, then legumes, then brassicas, "
    "then roots. Sow tomatoes indoors in March and plant out after the last frost in May. "
    "Runner beans need tall canes and plenty of water once they flower. Net the brassicas "
    "against pigeons and cabbage white butterflies. {fact} Strawberries need new plants "
    "every three years; peg down the runners in summer. The apple tree is pruned in winter, "
    "taking out crossing branches and opening the centre. Mulch the fruit bushes with bark "
    "in autumn, and feed the roses with seaweed in spring. Rainwater from the shed roof fills "
    "two butts, enough for a fortnight of dry weather."
)

#: (long note id, template, fact sentence, query)
CASES = [
    (
        "compost",
        COMPOST,
        "The lighthouse key is under the blue pot by the back door.",
        "where is the lighthouse key",
    ),
    (
        "compost",
        COMPOST,
        "Grandma's birthday party is on the 14th of June at the boathouse.",
        "when is grandma's birthday party",
    ),
    (
        "car",
        CAR,
        "The wifi password for the holiday flat is written inside the red notebook.",
        "where can I find the wifi password for the holiday flat",
    ),
    (
        "car",
        CAR,
        "Maya is allergic to penicillin and must never be given amoxicillin.",
        "which antibiotic allergy does Maya have",
    ),
    (
        "recipes",
        RECIPES,
        "The plumber Jonas said the boiler pressure must stay above one bar.",
        "what did the plumber say about the boiler pressure",
    ),
    (
        "recipes",
        RECIPES,
        "My passport number is stored in the fireproof box in the attic.",
        "where is my passport number kept",
    ),
    (
        "work",
        WORK,
        "The spare house keys are with our neighbour Ingrid at number twelve.",
        "who has the spare house keys",
    ),
    (
        "work",
        WORK,
        "The cat's vaccination is due again on the third of September.",
        "when is the cat's next vaccination",
    ),
    (
        "garden",
        GARDEN,
        "The piano tuner comes every January and charges ninety euros.",
        "how much does the piano tuner charge",
    ),
    (
        "garden",
        GARDEN,
        "Leo's swimming lessons moved to Wednesday at half past four.",
        "when are Leo's swimming lessons now",
    ),
    (
        "garden",
        GARDEN,
        "The water meter is read from the hatch behind the garage.",
        "where do I read the water meter",
    ),
]

#: Short notes near the queries' topics that do not answer them (the "kitchen note" kind).
DISTRACTORS = {
    "kitchen": "Kitchen: the spare light bulbs are in the drawer under the kettle.",
    "keys-note": "Remember to get a key cut for the new bike lock.",
    "party-ideas": "Party ideas: balloons, a cake and music in the garden.",
    "wifi-router": "The router restarts itself every night at four.",
    "doctor": "Doctor's surgery opens at eight; book appointments by phone.",
    "heating": "Bleed the radiators in autumn before turning the heating on.",
    "documents": "Scan the important documents and keep copies in the cloud folder.",
    "neighbours": "The neighbours are away in August; water their plants on Fridays.",
    "vet": "The vet is closed on Sundays; the emergency number is on the fridge.",
    "music": "Buy new guitar strings before the concert.",
    "sport": "The football club training is on Saturday mornings.",
    "meter": "Submit the electricity reading online every quarter.",
}
