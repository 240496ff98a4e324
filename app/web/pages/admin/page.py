"""The admin page: the curation overview (per curator and per video); list users, add one (with a
role and a password), change a role, reset a password, disable / enable / delete an account
(sessions end at once) and unlock a name locked by failed logins.
Admins only: the page is refused at the HTTP layer for other roles and every handler re-checks.
A bad input is one line in the message box and nothing else changes (app.web.common.keep_state)."""
from __future__ import annotations

import gradio as gr

from app.web.common import WebContext, filled, guard, msg_html, nav_html, page_blocks
from db.models.curation import ROLES
from mvp_core.errors import UserError

PAGE = "admin"


def users_table(ctx: WebContext) -> list[list]:
    """Newest first: the table shows only the rows that fit its height, so a user just added must lead
    it to be seen without scrolling; the search box finds any other by name."""
    from db.users.accounts import list_users
    with ctx.Session() as s:
        users = sorted(list_users(s), key=lambda u: u["created_at"], reverse=True)     # stable: by name within
        return [[u["name"], u["role"], "disabled" if u["disabled"] else "active", str(u["created_at"])[:19]]
                for u in users]


def add_user(ctx: WebContext, name: str, role: str, password: str) -> tuple[str, str]:
    """(message, the password to hand over). An empty password makes a random one."""
    from db.users.accounts import add_user as db_add
    with ctx.Session() as s:
        user, pw = db_add(s, name, role, password or None)
        s.commit()
        ctx.auth.forget_role(user.name)
    shown = "" if password else pw
    return f"added {user.name} ({user.role})" + (f"; password: {pw}" if shown else ""), shown


def set_role(ctx: WebContext, name: str, role: str) -> str:
    """Change a role (db.users.accounts.set_role also ends that user's sessions)."""
    from db.users.accounts import set_role as db_set_role
    with ctx.Session() as s:
        db_set_role(s, name, role)
        s.commit()
    ctx.auth.forget_role(name)
    return f"{name} is now {role}"


def reset_password(ctx: WebContext, name: str, password: str) -> str:
    """Set a password (db.users.accounts checks it and ends that user's sessions)."""
    from db.users.accounts import set_password
    with ctx.Session() as s:
        set_password(s, name, password)
        s.commit()
    return f"password of {name} changed"


def set_disabled(ctx: WebContext, caller: str, name: str, disabled: bool) -> str:
    """Disable (sessions end at once) or enable an account; an admin cannot disable themselves."""
    from db.users.accounts import set_disabled as db_set
    if disabled and (name or "").strip() == caller:
        raise UserError("you cannot disable your own account")
    with ctx.Session() as s:
        changed = db_set(s, name, disabled)
        s.commit()
    ctx.auth.forget_role(name)
    state = "disabled (their sessions are ended)" if disabled else "enabled"
    return f"{name} is {'now' if changed else 'already'} {state}"


def delete_user(ctx: WebContext, caller: str, name: str) -> str:
    """Delete an account with no stored work (db.users.accounts.delete_user says why not otherwise)."""
    from db.users.accounts import delete_user as db_delete
    if (name or "").strip() == caller:
        raise UserError("you cannot delete your own account")
    with ctx.Session() as s:
        db_delete(s, name)
        s.commit()
    ctx.auth.forget_role(name)
    return f"deleted {name}"


def unlock(ctx: WebContext, name: str) -> str:
    """Forget the failed logins counted against a name (as `mvp users unlock`)."""
    from db.users.accounts import check_name, get_user
    from db.users.sessions import unlock as db_unlock
    with ctx.Session() as s:
        if get_user(s, check_name(name)) is None:
            raise UserError(f"no user named {name!r}")
        n = db_unlock(s, name)
        s.commit()
    return f"{name} unlocked ({n} failed login{'s' if n != 1 else ''} forgotten)"


def overview_html(ctx: WebContext) -> str:
    """Curation at a glance: per curator and per video (db/review/overview.py)."""
    from app.web.templating import render
    from db.review import overlap_k
    from db.review.overview import curator_overview, video_overview
    with ctx.Session() as s:
        return render("admin_overview.html", k=overlap_k(s), curators=curator_overview(s), videos=video_overview(s))


def build(ctx: WebContext) -> gr.Blocks:
    with page_blocks("Admin") as demo:
        nav = gr.HTML()
        gr.Markdown("## Curation overview")
        overview = gr.HTML(elem_id="admin-overview")
        b_overview = gr.Button("Refresh the overview", elem_id="admin-overview-refresh", size="sm")
        gr.Markdown("## Users")
        table = gr.Dataframe(headers=["name", "role", "status", "created"], interactive=False,
                             show_search="search", elem_id="admin-users")
        msg = gr.HTML(elem_id="admin-msg")
        with gr.Row():
            name = gr.Textbox(label="User name", elem_id="admin-name")
            role = gr.Dropdown(list(ROLES), value="curator", label="Role", elem_id="admin-role")
            password = gr.Textbox(label="Password (empty: generate one)", type="password", elem_id="admin-password")
        with gr.Row():
            b_add = gr.Button("Add user", variant="primary", elem_id="admin-add")
            b_role = gr.Button("Set role", elem_id="admin-set-role")
            b_pw = gr.Button("Set password", elem_id="admin-set-password")
        with gr.Row():
            b_disable = gr.Button("Disable", elem_id="admin-disable")
            b_enable = gr.Button("Enable", elem_id="admin-enable")
            b_unlock = gr.Button("Unlock", elem_id="admin-unlock")
            b_delete = gr.Button("Delete", variant="stop", elem_id="admin-delete")

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE):
                return nav_html(ctx, request.username, PAGE), users_table(ctx), overview_html(ctx)
        demo.load(on_load, None, [nav, table, overview])

        def on_overview(request: gr.Request):
            with guard(ctx, request, PAGE):
                return overview_html(ctx)
        b_overview.click(on_overview, None, [overview], api_name="overview")

        def on_add(n, r, pw, request: gr.Request):
            with guard(ctx, request, PAGE):
                text, _ = add_user(ctx, n, r, pw)
                return msg_html(text), users_table(ctx), ""
        b_add.click(on_add, [name, role, password], [msg, table, password], api_name="add_user")

        def on_role(n, r, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(set_role(ctx, n, r)), users_table(ctx)
        b_role.click(on_role, [name, role], [msg, table], api_name="set_role")

        def on_pw(n, pw, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(reset_password(ctx, n, pw)), ""   # msg_html escapes (once)
        b_pw.click(on_pw, [name, password], [msg, password], api_name="set_password")

        def on_disable(n, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(set_disabled(ctx, request.username, n, True)), users_table(ctx)
        b_disable.click(on_disable, [name], [msg, table], api_name="disable_user")

        def on_enable(n, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(set_disabled(ctx, request.username, n, False)), users_table(ctx)
        b_enable.click(on_enable, [name], [msg, table], api_name="enable_user")

        def on_delete(n, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(delete_user(ctx, request.username, n)), users_table(ctx)
        b_delete.click(on_delete, [name], [msg, table], api_name="delete_user")

        def on_unlock(n, request: gr.Request):
            with guard(ctx, request, PAGE):
                return msg_html(unlock(ctx, n))
        b_unlock.click(on_unlock, [name], [msg], api_name="unlock_user")
        _roots_section(ctx, demo)
    return demo


def set_roots(ctx: WebContext, text: str) -> str:
    from db.puzzles.sources import set_allowed_roots
    with ctx.Session() as s:
        roots = set_allowed_roots(s, (text or "").splitlines())
    return f"{len(roots)} allowed video folders" + (f": {', '.join(roots)}" if roots else "")


def _roots_section(ctx: WebContext, demo: gr.Blocks) -> None:
    """The folders the Data page may read videos from (nothing outside them is ever read)."""
    from db.puzzles.sources import allowed_roots
    gr.Markdown("## Video folders the Data page may read")
    # read-only until the page's load has filled it (common.filled says why)
    roots = gr.Textbox(label="Allowed folders on the server, one absolute path per line", lines=3,
                       elem_id="admin-roots", interactive=False)
    b_roots = gr.Button("Save allowed folders", elem_id="admin-save-roots")
    roots_msg = gr.HTML(elem_id="admin-roots-msg")

    def on_load(request: gr.Request):
        with guard(ctx, request, PAGE):
            with ctx.Session() as s:
                return filled(value="\n".join(allowed_roots(s)))
    demo.load(on_load, None, [roots])

    def on_save(text, request: gr.Request):
        with guard(ctx, request, PAGE):
            return msg_html(set_roots(ctx, text))
    b_roots.click(on_save, [roots], [roots_msg], api_name="set_roots")
