"""The moderator's console in a real browser (Chromium at 1280×800, a live server).

A superuser walks ingest → held op → review page → edit & approve into another leaf → the tree
shows it → edit a leaf → revert → diff → decline with a reason, counting the clicks each decision
took (written to var/browser/clicks.json for bench/bench_admin.py). Two tabs edit one leaf: the
second is refused, the first kept. A tenant's staff is refused every page and POST of another
tenant, sees special-tier values masked, and a POST without the CSRF token is refused. No page
overflows 1280 px, and axe-core finds no serious or critical violation on the tree, queue and
review pages. Screenshots of the pages walked go to var/browser/pages/ (the guide's pictures).
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Permission
from personatree_client import Message, PersonaTree

from memory import selectors
from memory.engine.ops import Op
from memory.models import OpRecord, Subject, TenantStaff
from memory.services.tree import Actor, Source, leaf_edit, tree_apply_ops
from tests.browser.conftest import PAGES, ROOT
from tests.factories import ApiKeyFactory, ChunkFactory, TenantFactory

Axe = pytest.importorskip(
    "axe_playwright_python.sync_playwright", reason="axe-playwright-python is not installed (the dev extra)"
).Axe
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

CONDITIONS = "body/health/conditions"
ROLE = "identity/occupation/current_role"
PASSWORD = "pw-browser-console"
STAFF_PERMS = [
    "view_tenant", "view_subject", "change_subject", "view_treeversion", "view_oprecord",
    "change_oprecord", "view_reviewitem", "change_reviewitem", "view_chunk", "view_apikey",
]  # fmt: skip
CONVERSATIONS = {
    "clinic": ("ana", ["Hi, I'm Ana. I work as a nurse in Lyon.", "My favourite food is ramen."]),
    "gym": ("ben", ["I'm Ben, a carpenter.", "I go climbing on Sundays."]),
}
# What the model made of the last turn: a value on the wrong special-tier leaf (held for review).
MISPLACED = {
    "clinic": ("I have type 1 diabetes and I take insulin.", "body/health/allergies", "Has type 1 diabetes, takes insulin"),
    "gym": ("I am a devout Buddhist.", "identity/beliefs/politics", "Devout Buddhist"),
}  # fmt: skip


def ingest(base_url, tenant_name):
    """The tenant's conversation through the API (the stand-in MemListener writes what it finds),
    then the model's op on its last turn, put on the wrong special-tier leaf: held for review."""
    tenant = TenantFactory(name=tenant_name)
    _, raw = ApiKeyFactory.create_raw(tenant=tenant, scopes=["ingest", "read"])
    external_id, lines = CONVERSATIONS[tenant_name]
    sentence, path, value = MISPLACED[tenant_name]
    messages = []
    for line in [*lines, sentence]:
        messages += [Message("user", line), Message("assistant", "Thanks, noted.")]
    with PersonaTree(base_url, raw) as pt:
        pt.ingest(external_id, messages)
        pt.flush(external_id)
    subject = Subject.objects.select_related("head", "tenant").get(tenant=tenant, external_id=external_id)
    chunk = ChunkFactory(subject=subject, start_seq=1, end_seq=len(messages))
    outcome = tree_apply_ops(
        subject=subject,
        base_version=subject.head_version,
        ops=[Op(type="ADD", path=path, value=value, source=sentence)],
        actor=Actor.for_model(model_id="memlistener-test"),
        source=Source(chunk.pk, chunk.start_seq, chunk.end_seq),
    )
    assert len(outcome.pending_review) == 1
    return tenant, Subject.objects.select_related("head", "tenant").get(pk=subject.pk)


def login(page, base_url, username):
    page.goto(f"{base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}/admin/")


def shot(page, name):
    PAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(PAGES / f"{name}.png"))


def assert_fits(page, what):
    """Nothing on the page is wider than the window: no horizontal scrolling at 1280 px."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{what} overflows: {width}px"


def assert_accessible(page, what):
    result = Axe().run(page)
    bad = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
        for v in result.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert not bad, f"{what}: {bad}"


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.test", PASSWORD)


def staff(django_user_model, name, tenant):
    user = django_user_model.objects.create_user(name, password=PASSWORD, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="memory", codename__in=STAFF_PERMS)
    )
    TenantStaff.objects.create(user=user, tenant=tenant)
    return user


class Clicks:
    """Counts the clicks a decision takes on the review page."""

    def __init__(self, page):
        self.page, self.clicks, self.decisions = page, 0, 0

    def click(self, selector):
        self.clicks += 1
        self.page.click(selector)

    def decided(self):
        self.decisions += 1


def test_moderator_walks_from_a_held_op_to_the_tree_and_back(base_url, new_tab, superuser):
    _, ana = ingest(base_url, "clinic")
    ingest(base_url, "gym")
    held = OpRecord.objects.filter(subject=ana, status="pending_review").order_by("created_at").first()
    assert held.path != CONDITIONS
    page = new_tab()
    login(page, base_url, "root")
    waiting = page.locator("#pt-waiting")
    assert "clinic" in waiting.inner_text() and "gym" in waiting.inner_text()
    shot(page, "index")

    # The queue, filtered to the clinic, oldest first; its first item opens the review page.
    page.click("#pt-waiting >> text=clinic")
    assert_fits(page, "queue")
    assert_accessible(page, "queue")
    shot(page, "queue")
    page.locator("#result_list tbody tr").first.locator("th a, td a").first.click()
    assert page.locator("#pt-proposal").is_visible()
    assert held.path in page.inner_text("#pt-proposal")
    assert page.locator(".pt-turn mark").count() >= 1  # the user's words marked in the conversation
    assert "special tier" in page.inner_text("#content-main")
    assert_fits(page, "review page")
    assert_accessible(page, "review page")
    shot(page, "review")

    # Edit & approve into the right leaf: the picker says what the leaf is.
    clicks = Clicks(page)
    page.fill("#pt-path", CONDITIONS)
    assert "special" in page.inner_text("#pt-leaf-info")
    page.fill("#pt-value", "Has type 1 diabetes and takes insulin")
    clicks.click("#pt-edit")
    clicks.decided()
    page.wait_for_load_state()
    assert "Approved body/health/conditions" in page.inner_text("ul.messagelist")
    held.refresh_from_db()
    assert (held.status, held.path, held.new_value) == (
        "approved",
        CONDITIONS,
        "Has type 1 diabetes and takes insulin",
    )
    assert "corrected by root" in held.detail

    # The tree shows it; filter, expand and collapse; no control overlaps another.
    page.goto(f"{base_url}/admin/memory/subject/{ana.pk}/change/")
    leaf = page.locator(f"#leaf-{slug(CONDITIONS)}")
    assert "Has type 1 diabetes and takes insulin" in leaf.inner_text()
    assert_no_overlap(page, ".pt-toolbar a.button, .pt-toolbar button, .pt-tree summary")
    page.click("#pt-collapse")
    assert not leaf.is_visible()
    page.fill("#pt-filter", "insulin")
    assert leaf.is_visible() and page.locator(".pt-leaf:not(.pt-hidden)").count() == 1
    page.fill("#pt-filter", "")
    page.click("#pt-expand")
    assert_fits(page, "tree")
    assert_accessible(page, "tree")
    shot(page, "tree")

    # Edit a leaf in place, then revert to the version before it, then read the diff.
    before = Subject.objects.get(pk=ana.pk).head_version
    edited = page.locator(f"#leaf-{slug(CONDITIONS)} form")
    edited.locator("input[name=value]").fill("Has type 1 diabetes")
    edited.locator("button[value=save]").click()
    assert f"Saved {CONDITIONS} as v{before + 1}" in page.inner_text("ul.messagelist")
    page.goto(f"{base_url}/admin/memory/subject/{ana.pk}/history/")
    page.click(f"a[href$='/revert/{before}/']")
    shot(page, "revert")
    page.click("input[type=submit]")
    assert f"Reverted to v{before}" in page.inner_text("ul.messagelist")
    assert selectors.tree_current(Subject.objects.select_related("head").get(pk=ana.pk))[CONDITIONS] == (
        "Has type 1 diabetes and takes insulin"
    )
    page.goto(f"{base_url}/admin/memory/subject/{ana.pk}/history/?a={before}&b={before + 1}")
    assert "Has type 1 diabetes" in page.inner_text("#content-main")
    shot(page, "versions")
    page.goto(f"{base_url}/admin/memory/oprecord/?subject__id__exact={ana.pk}&path__exact={CONDITIONS}")
    assert_fits(page, "op log of one leaf")
    assert page.locator("#result_list tbody tr").count() >= 3  # approve, edit, revert
    shot(page, "oplog")

    # Decline the next held op (the gym's) with a reason, from the whole queue.
    page.goto(f"{base_url}/admin/memory/reviewitem/")
    page.locator("#result_list tbody tr").first.locator("th a, td a").first.click()
    pending = OpRecord.objects.get(pk=int(re.search(r"/reviewitem/(\d+)/", page.url).group(1)))
    page.fill("#pt-note", "The user did not say this")
    clicks.click("#pt-decline")
    clicks.decided()
    pending.refresh_from_db()
    assert (pending.status, pending.decision_note) == ("declined", "The user did not say this")
    write_clicks(clicks)


def test_approve_and_next_with_the_keyboard_and_a_stale_page_loses_nothing(base_url, new_tab, superuser):
    _, ana = ingest(base_url, "clinic")
    _, ben = ingest(base_url, "gym")
    held = list(OpRecord.objects.filter(status="pending_review").order_by("created_at", "id"))
    assert len(held) >= 2
    page = new_tab()
    login(page, base_url, "root")
    page.goto(f"{base_url}/admin/memory/reviewitem/{held[0].pk}/change/")
    # The tree moves after the page was shown: the decision is refused, the edit kept in the form.
    page.fill("#pt-value", "kept while refused")
    subject = Subject.objects.select_related("head", "tenant").get(pk=held[0].subject_id)
    leaf_edit(
        subject=subject,
        path=ROLE,
        value="surgeon",
        actor=Actor.system("test"),
        base_version=subject.head_version,
    )
    page.click("#pt-edit")
    assert "The tree changed meanwhile" in page.inner_text("ul.messagelist")
    assert page.input_value("#pt-value") == "kept while refused"
    held[0].refresh_from_db()
    assert held[0].status == "pending_review"
    # Reload, approve with "a": the next item of the queue opens.
    page.goto(f"{base_url}/admin/memory/reviewitem/{held[0].pk}/change/")
    page.keyboard.press("a")
    page.wait_for_url(re.compile(rf"/reviewitem/{held[1].pk}/change/"))
    held[0].refresh_from_db()
    assert held[0].status == "approved"
    page.keyboard.press("k")  # previous: none left before it
    assert page.url.endswith(f"/reviewitem/{held[1].pk}/change/")
    page.keyboard.press("d")
    page.keyboard.type("not what the user said")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    held[1].refresh_from_db()
    assert held[1].status == "declined"


def test_two_tabs_editing_one_leaf_the_second_is_refused(base_url, new_tab, superuser):
    _, ana = ingest(base_url, "clinic")
    first = new_tab()
    login(first, base_url, "root")
    second = new_tab(context=first.context)
    tree_url = f"{base_url}/admin/memory/subject/{ana.pk}/change/"
    first.goto(tree_url)
    second.goto(tree_url)
    path = next(p for p in selectors.tree_current(ana) if not p.startswith("identity/beliefs"))
    for tab, value in ((first, "first tab's value"), (second, "second tab's value")):
        form = tab.locator(f"#leaf-{slug(path)} form")
        form.locator("input[name=value]").fill(value)
        form.locator("button[value=save]").click()
    assert "Saved" in first.inner_text("ul.messagelist")
    assert "The tree changed meanwhile" in second.inner_text("ul.messagelist")
    assert selectors.tree_current(Subject.objects.select_related("head").get(pk=ana.pk))[path] == (
        "first tab's value"
    )


def test_staff_of_one_tenant_are_refused_everything_of_another(base_url, new_tab, django_user_model):
    clinic, ana = ingest(base_url, "clinic")
    gym, ben = ingest(base_url, "gym")
    staff(django_user_model, "cleo", clinic)  # no special-tier permission
    page = new_tab()
    login(page, base_url, "cleo")
    assert "gym" not in page.inner_text("#pt-waiting")
    theirs = OpRecord.objects.filter(subject=ben).order_by("id")
    held = theirs.filter(status="pending_review").first()
    version = ben.head
    chunk = ben.chunks.first()
    key = gym.api_keys.first()
    admin = f"{base_url}/admin/memory"
    page.goto(f"{base_url}/admin/")
    for url in (
        f"{admin}/subject/{ben.pk}/change/",
        f"{admin}/subject/{ben.pk}/history/",
        f"{admin}/subject/{ben.pk}/revert/0/",
        f"{admin}/reviewitem/{held.pk}/change/",
        f"{admin}/oprecord/{theirs.first().pk}/change/",
        f"{admin}/treeversion/{version.pk}/change/",
        f"{admin}/chunk/{chunk.pk}/change/",
        f"{admin}/apikey/{key.pk}/change/",
        f"{admin}/tenant/{gym.pk}/change/",
    ):
        response = page.request.get(url, max_redirects=0)
        assert response.status in (302, 403, 404), url
        assert "ben" not in (response.text() if response.status != 302 else ""), url
    leaks = ["Devout Buddhist", "carpenter", f"subject/{ben.pk}/", *(f"oprecord/{r.pk}/" for r in theirs),
             *(f"reviewitem/{r.pk}/" for r in theirs)]  # fmt: skip
    for url, query in (
        (
            f"{base_url}/admin/autocomplete/",
            "?app_label=memory&model_name=oprecord&field_name=subject&term=ben",
        ),
        (f"{admin}/subject/", "?q=ben"),
        (f"{admin}/oprecord/", f"?subject__id__exact={ben.pk}"),
        (f"{admin}/oprecord/", "?q=Buddhist"),
        (f"{admin}/reviewitem/", f"?subject__tenant__id__exact={gym.pk}"),
    ):
        response = page.request.get(url + query)
        assert response.status in (200, 403, 404), url
        assert not [leak for leak in leaks if leak in response.text()], url + query

    # Every POST of the other tenant's objects is refused, with a valid CSRF token.
    page.goto(f"{admin}/subject/{ana.pk}/change/")
    token = page.locator("input[name=csrfmiddlewaretoken]").first.input_value()
    headers = {"Referer": page.url}
    posts = (
        (f"{admin}/subject/{ben.pk}/leaf/", {"path": ROLE, "value": "pirate", "base_version": ben.head_version, "action": "save"}),
        (f"{admin}/subject/{ben.pk}/revert/0/", {"base_version": ben.head_version}),
        (f"{admin}/reviewitem/{held.pk}/decide/", {"decision": "approve", "base_version": ben.head_version}),
        (f"{admin}/reviewitem/", {"action": "approve_ops", "_selected_action": [held.pk]}),
        (f"{admin}/oprecord/", {"action": "decline_ops", "_selected_action": [held.pk], "confirm_decline": "1", "note": "x"}),
    )  # fmt: skip
    head_before = ben.head_version
    for url, data in posts:
        form = {"csrfmiddlewaretoken": token, **data}
        page.request.post(url, form=form, headers=headers, max_redirects=0)
    held.refresh_from_db()
    assert held.status == "pending_review"
    assert Subject.objects.get(pk=ben.pk).head_version == head_before

    # Special tier masked; CSRF refused.
    mine = OpRecord.objects.filter(subject=ana, status="pending_review").first()
    page.goto(f"{admin}/reviewitem/{mine.pk}/change/")
    assert "•••• (special tier)" in page.inner_text("#content-main")
    shot(page, "staff-masked")
    assert "diabetes" not in page.content()
    assert page.locator("#pt-approve").count() == 0
    refused = page.request.post(
        f"{admin}/subject/{ana.pk}/leaf/",
        form={"path": ROLE, "value": "forged", "base_version": ana.head_version, "action": "save"},
        headers=headers,
    )
    assert refused.status == 403
    assert (
        "forged" not in selectors.tree_current(Subject.objects.select_related("head").get(pk=ana.pk)).values()
    )


def test_no_page_of_the_console_overflows_at_1280(base_url, new_tab, superuser):
    _, ana = ingest(base_url, "clinic")
    held = OpRecord.objects.filter(subject=ana, status="pending_review").first()
    page = new_tab()
    login(page, base_url, "root")
    admin = f"{base_url}/admin/memory"
    # Every list the index links to, and the pages of one subject and one held op.
    lists = page.eval_on_selector_all("#content-main th[scope=row] a", "links => links.map(a => a.href)")
    assert f"{admin}/reviewitem/" in lists and len(lists) >= 10
    wide = []
    for url in [
        *lists,
        f"{admin}/subject/{ana.pk}/change/",
        f"{admin}/subject/{ana.pk}/history/",
        f"{admin}/reviewitem/{held.pk}/change/",
        f"{admin}/oprecord/{held.pk}/change/",
    ]:
        page.goto(url)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > page.viewport_size["width"]:
            wide.append((url.removeprefix(base_url), width))
    assert not wide, wide


def slug(path):
    return re.sub(r"[^a-z0-9_-]+", "", path.replace("/", "").lower())


def assert_no_overlap(page, selector):
    boxes = [b for b in (el.bounding_box() for el in page.locator(selector).all()) if b]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
            )  # fmt: skip
            assert apart, (a, b)


def write_clicks(clicks):
    out = ROOT / "var" / "browser" / "clicks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"clicks": clicks.clicks, "decisions": clicks.decisions}) + "\n")
