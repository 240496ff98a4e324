"""Every whole-number field of every form refuses 2.5 (app.web.common.whole_number + form_number): the
test walks the pages' built Blocks (each page's Gradio config, as the browser gets it) for the fields
marked whole, and presses each button that takes one, as the page does, with 2.5 in that field and
the page's loaded values everywhere else. Gradio's own `precision=0` rounded 2.5 to 2 before the
handler saw it, so synthesis, a frozen set (which can never be changed after), a rollout job and a
steering bank started with a number nobody typed."""
from __future__ import annotations

import pytest
from fixtures_security import gradio_event, http_login
from fixtures_web import PASSWORDS

from app.web.common import WHOLE
from app.web.pages import PAGES

pytestmark = [pytest.mark.browser]
WATCHED = ("runs", "jobs", "train", "steer", "exports")      # where a launched job or an export writes


def _stored(app) -> tuple:
    """What a launch or a freeze would add: files where jobs write, and the curated sets."""
    from db.sets.curated import list_sets
    files = sorted(str(p.relative_to(app.data_dir)) for d in WATCHED for p in (app.data_dir / d).rglob("*"))
    with app.Session() as s:
        return files, [x["name"] for x in list_sets(s)]


def _value(out):
    """A load event's output as the value the browser then holds (None: the output does not set one)."""
    if isinstance(out, dict) and out.get("__type__") == "update":
        return ("set", out["value"]) if "value" in out else None
    return None if isinstance(out, dict) else ("set", out)


def _opened(c, page: str) -> tuple[dict, str, dict]:
    """(config, session hash, {component id: value}) of `page` opened as a browser opens it: every
    component's value as built, then as the page's load events set it."""
    import secrets
    cfg = c.get(f"/{page}/config").json()
    values = {x["id"]: x.get("props", {}).get("value") for x in cfg["components"]}
    session_hash = secrets.token_hex(6)
    for dep in cfg["dependencies"]:
        if dep.get("backend_fn") and any(t[1] == "load" for t in dep["targets"]):
            ok, out = gradio_event(c, page, session_hash, dep["id"], [values[i] for i in dep["inputs"]])
            assert ok, out
            for cid, o in zip(dep["outputs"], out["data"]):
                if (v := _value(o)) is not None:
                    values[cid] = v[1]
    return cfg, session_hash, values


def test_every_whole_number_field_refuses_a_fraction(web_app):
    c = http_login(web_app.url, "ada", PASSWORDS["ada"])
    refused = []
    for page in (p.path for p in PAGES):
        cfg, session_hash, values = _opened(c, page)
        numbers = {x["id"]: x["props"] for x in cfg["components"] if x["type"] == "number"}
        # Gradio's precision rounds before the handler sees the number: no form may use it
        assert all(p.get("precision") is None for p in numbers.values()), page
        whole = {i: p for i, p in numbers.items() if WHOLE in (p.get("elem_classes") or [])}
        pressed = set()
        for dep in cfg["dependencies"]:
            if not any(t[1] in ("click", "submit") for t in dep["targets"]):
                continue
            for pos, cid in enumerate(dep["inputs"]):
                if cid not in whole:
                    continue
                args = [values[i] for i in dep["inputs"]]
                args[pos] = 2.5
                before = _stored(web_app)
                ok, out = gradio_event(c, page, session_hash, dep["id"], args)
                where = f"{page}: {whole[cid].get('label')}"
                assert not ok, (where, out)
                assert "must be a whole number, not 2.5" in out["error"] and "\n" not in out["error"], (where, out)
                assert _stored(web_app) == before, where          # nothing launched, nothing stored
                pressed.add(cid)
                refused.append(where)
        assert pressed == set(whole), (page, [whole[i].get("label") for i in set(whole) - pressed])
    # the forms the walk met: synthesis and freeze (Data), rollouts, banks and steering (Rollouts), Train
    assert {w.split(":")[0] for w in refused} >= {"datasets", "rollouts", "train"}, refused
