"""The code under test: answers "What is the capital of X?" from the capability's facts.json.

``answer(question, candidate_dir)`` is the project's ``target``: the capability directory
holds ``facts.json`` (country -> capital, lower-case keys); a country it does not know is
answered "I don't know". Editing the capability means adding facts.
"""

import json
import re
from pathlib import Path

QUESTION = re.compile(r"capital of ([A-Za-z .'-]+?)\?")


def answer(question: str, candidate_dir: Path) -> str:
    facts = json.loads((Path(candidate_dir) / "facts.json").read_text())
    found = QUESTION.search(question)
    if found is None:
        return "I don't know"
    return facts.get(found.group(1).strip().lower(), "I don't know")
