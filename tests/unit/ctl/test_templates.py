"""memctl's shared Jinja2 templates: they parse, refuse undefined variables, and render the
client files byte for byte as memctl wrote them before the text moved out of Python."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from jinja2 import UndefinedError

from memctl.api.clients import Plan
from memctl.provision._clients import SKILLS, _Owned, _targets
from memctl.provision._launcher import launcher_text
from memctl.provision._templates import _environment, render, template_dir

REPO = Path(__file__).resolve().parents[3]

# sha256 (first 24 hex digits) of each file memctl owns, as the Python strings rendered it
# before the text moved to `templates/`. A changed digest means the text clients see changed:
# only ever on purpose (memory-recall: issue 34, an empty search means nothing fits).
RENDERED = {
    ".claude/skills/memory-recall/SKILL.md": "e570506587feebaf3f3a02fa",
    ".claude/skills/memory-save/SKILL.md": "b99974ac0ed90bbb223a203c",
    ".claude/skills/plan-capture/SKILL.md": "3ef563db1e3a68575cb7a7b1",
    ".agents/README.md": "426ace64528f23a8055518b3",
    ".agents/rules/memory-recall.md": "e383f1a30edfb8fec195f1e9",
    ".agents/rules/memory-save.md": "b582b071251046a70611090b",
    ".agents/rules/plan-capture.md": "bce605330d67bef29a946b02",
}


def test_templates_come_from_the_top_level_directory() -> None:
    assert template_dir().resolve() == REPO / "templates"


def test_every_template_parses() -> None:
    environment = _environment()
    names = [n for n in environment.list_templates() if not n.startswith("ui/")]  # tests/ui parses those
    assert names, "no templates found"
    for name in names:
        environment.get_template(name)


def test_owned_client_files_render_byte_identical() -> None:
    plan = Plan(project=Path("/srv/app"), launcher=Path("/opt/memctl/bin/memctl"), hooks=True)
    owned = {str(t.path): t.text for t in _targets(plan) if isinstance(t, _Owned)}
    digests = {path: hashlib.sha256(text.encode()).hexdigest()[:24] for path, text in owned.items()}
    assert digests == RENDERED


def test_the_launcher_renders_byte_identical() -> None:
    assert launcher_text(["/opt/x y/bin/memctl", "-m", "memctl"]) == (
        "#!/bin/sh\n"
        "# memctl-launcher-v1: written by `memctl up`; runs the memctl installed below.\n"
        "exec '/opt/x y/bin/memctl' -m memctl \"$@\"\n"
    )


def test_a_skill_is_its_rule_behind_front_matter() -> None:
    for skill in SKILLS:
        rule = render("skills/rule.md.j2", skill=skill)
        front, rest = render("skills/SKILL.md.j2", skill=skill).removeprefix("---\n").split("\n---\n\n", 1)
        assert rest == rule and rule.startswith(f"# {skill.title}\n\n") and rule.endswith(".\n")
        fields = dict(line.split(": ", 1) for line in front.splitlines())
        assert fields["name"] == skill.name and json.loads(fields["description"]) == skill.description


def test_an_undefined_variable_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(UndefinedError):
        render("agents/README.md.j2", skills=SKILLS, entry={})
