"""The student's JupyterLab as README's "A student" sets it up, in headless chromium.

From a fresh copy of the course released with the README's instructor commands, the student's
own machine gets the README's nbgrader config and extension commands, and JupyterLab is started
as step 3 says. The page shows the Assignment List and Validate, and no formgrader, Create
Assignment or course list; Validate's "Success!" sits beside the notebook's note on what it does
not check; Submit files the work as the README's student. Screenshots go to tests/artifacts/.
"""
from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import nbformat
import pytest

from tests.test_browser import ARTIFACTS, Lab, browser, page, quiet_news, run_menu, shot  # noqa: F401
from tests.test_readme_paths import (COURSE_ID, REPO, clean_env, commands, fresh_course, readme_section,
                                     run, steps, student_setup)

pytestmark = pytest.mark.browser


def right_form_wrong_numbers(path) -> None:
    """The published solution with per_device_bytes doubled: every visible test still passes."""
    nb = nbformat.read(REPO / "solutions" / "worked" / "w1-memory.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_numbers")
    cell.source += "\nper_device_bytes = 2 * per_device_bytes"
    nbformat.write(nb, path)


def test_the_students_lab_as_the_readme_sets_it_up(tmp_path, page):  # noqa: F811
    course = fresh_course(tmp_path / "course")
    for line in commands(steps(readme_section("An instructor"))[1]):
        run(line, course, clean_env())
    env, work = student_setup(course, tmp_path / "maria")
    home = tmp_path / "maria"
    quiet_news(home / ".jupyter")     # no news toast over the screenshots
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lab = Lab(work, env, ARTIFACTS / "readme-student-lab.log")
    try:
        # formgrader is not served at all
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(lab.url("/formgrader"), timeout=30)
        assert refused.value.code == 404

        page.goto(lab.url("/lab"))
        page.locator(".jp-LabShell").wait_for()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Nbgrader$")).click()
        page.locator(".lm-Menu-itemLabel", has_text="Assignment List").wait_for()
        labels = [t.strip() for t in page.locator(".lm-Menu:visible .lm-Menu-itemLabel").all_inner_texts()]
        shot(page, "readme-student-01-nbgrader-menu")
        assert "Assignment List" in labels, labels
        for absent in ("Formgrader", "Create Assignment", "Course List"):
            assert not any(absent.lower() in label.lower() for label in labels), (absent, labels)
        page.keyboard.press("Escape")

        # fetch, as the README's step 4 says
        run_menu(page, "Nbgrader", "Assignment List")
        released = page.locator("#released_assignments_list")
        released.locator(".list_item", has_text="worked").get_by_role("button", name="Fetch").click()
        fetched = page.locator("#fetched_assignments_list")
        fetched.get_by_text("worked").first.wait_for()
        mine = work / COURSE_ID / "worked" / "w1-memory.ipynb"
        assert mine.exists(), f"fetch put nothing at {mine}"
        shot(page, "readme-student-02-fetched")
        right_form_wrong_numbers(mine)

        # open it: the note under the title, Validate in the toolbar, no Create Assignment anywhere
        fetched.locator("a.assignment-notebooks-link", has_text="worked").click()
        fetched.get_by_role("link", name=re.compile("w1-memory")).click()
        notebook = page.locator(".jp-NotebookPanel:visible")
        note = notebook.locator(".jp-RenderedMarkdown blockquote", has_text="What Validate tells you.")
        note.wait_for()
        assert not page.get_by_text("Create Assignment").count()
        page.locator(".jp-NotebookPanel:visible .jp-Toolbar").get_by_role("button", name="Validate").click()
        dialog = page.locator(".jp-Dialog")
        dialog.wait_for(timeout=180_000)
        dialog.get_by_text(re.compile("Success|fail|error", re.I)).first.wait_for(timeout=180_000)
        assert "Success! Your notebook passes all the tests." in dialog.inner_text()   # wrong numbers
        assert "checked when your notebook is graded" in note.inner_text()
        shot(page, "readme-student-03-validate-beside-the-note")
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()

        # submit: filed as the README's student
        page.locator(".lm-TabBar-tab", has_text="Assignments").first.click()
        fetched.locator(".list_item", has_text="worked").get_by_role("button", name="Submit").click()
        page.locator("#submitted_assignments_list").get_by_text("worked").first.wait_for()
        shot(page, "readme-student-04-submitted")
        inbound = course / "exchange" / COURSE_ID / "inbound"
        deadline = time.monotonic() + 30
        while not any(inbound.glob("*+worked+*")) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sorted(p.name.split("+")[0] for p in inbound.iterdir()) == [env["JUPYTERHUB_USER"]]
    finally:
        lab.stop()
