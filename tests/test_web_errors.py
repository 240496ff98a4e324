"""A user error in the browser is one line in the page's message box, every other component keeps its
state (no "Error" badges, the table and the typed fields stay), and the server log gets one line,
not a traceback (app.web.common: `guard` + `keep_state`). Admin, Data and Train, at desktop and
phone width."""
from __future__ import annotations

import uuid

import pytest
from fixtures_web import login, shot
from testkit.web import dataframe_rows

pytestmark = [pytest.mark.browser]
PHONE = {"width": 390, "height": 844}


def _log(app) -> str:
    return (app.data_dir.parent / "serve.log").read_text(errors="replace")


def _no_error_badges(page) -> None:
    assert page.get_by_text("Error", exact=True).count() == 0


@pytest.fixture
def log_since(web_app):
    """Call it to get what the server logged since the test started."""
    start = len(_log(web_app))
    return lambda: _log(web_app)[start:]


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_admin_short_password_is_one_line_and_keeps_the_page(browser, web_app, log_since, width):
    ctx, page = login(browser, web_app, "ada", path="/admin/")
    try:
        if width == "phone":
            page.set_viewport_size(PHONE)
        grid = "#admin-users [role=grid]"
        page.wait_for_function(f"Number((document.querySelector('{grid}') || {{}}).ariaRowCount) >= 4")
        rows = page.get_attribute(grid, "aria-rowcount")
        drawn = dataframe_rows("admin-users")
        first = page.locator(drawn).first.inner_text()                      # newest first: the table's top row
        name = f"shorty{uuid.uuid4().hex[:6]}"
        page.fill("#admin-name textarea", name)
        page.fill("#admin-password input", "short")
        page.click("#admin-add")
        page.wait_for_selector("#admin-msg .mvp-msg-error")
        text = page.inner_text("#admin-msg")
        assert "at least 10 characters" in text and len(text.strip().splitlines()) == 1
        _no_error_badges(page)
        assert page.get_attribute(grid, "aria-rowcount") == rows            # the table is still there
        assert page.locator(drawn).first.inner_text() == first             # its rows as they were
        assert page.input_value("#admin-password input") == "short"        # the typed password too
        assert page.input_value("#admin-name textarea") == name
        shot(page, f"web_errors_admin_{width}")
        logged = log_since()
        assert "Traceback" not in logged
        assert sum("at least 10 characters" in ln for ln in logged.splitlines()) == 1
        with web_app.Session() as s:
            from db.users.accounts import get_user
            assert get_user(s, name) is None                               # nothing stored
    finally:
        ctx.close()


def test_data_bad_split_is_one_line_and_keeps_the_page(browser, web_app, log_since):
    ctx, page = login(browser, web_app, "rhea", path="/datasets/")
    try:
        page.wait_for_selector("#data-files")
        files_before = page.inner_text("#data-files-box")
        page.fill("#data-set-name textarea", "never-frozen")
        page.fill("#data-split-train input", "0.9")
        page.fill("#data-split-val input", "0.9")
        page.click("#data-freeze")
        page.wait_for_selector("#data-msg .mvp-msg-error")
        assert "add up to 1" in page.inner_text("#data-msg")
        _no_error_badges(page)
        assert page.inner_text("#data-files-box") == files_before
        assert page.input_value("#data-set-name textarea") == "never-frozen"
        assert page.input_value("#data-split-val input") == "0.9"
        logged = log_since()
        assert "Traceback" not in logged and sum("add up to 1" in ln for ln in logged.splitlines()) == 1
    finally:
        ctx.close()


def test_train_bad_number_is_one_line_and_keeps_the_form(browser, web_app, log_since):
    ctx, page = login(browser, web_app, "rhea", path="/train/")
    try:
        page.set_viewport_size(PHONE)
        page.wait_for_selector("#train-launch:not([disabled])")
        page.fill("#train-max-steps input", "2.5")
        page.click("#train-launch")
        page.wait_for_selector("#train-msg .mvp-msg-error")
        assert "max_steps must be a whole number" in page.inner_text("#train-msg")
        _no_error_badges(page)
        assert page.input_value("#train-max-steps input") == "2.5"
        shot(page, "web_errors_train_phone")
        logged = log_since()
        assert "Traceback" not in logged
        assert sum("max_steps must be a whole number" in ln for ln in logged.splitlines()) == 1
    finally:
        ctx.close()
