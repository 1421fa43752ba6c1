"""README's "A student" and "An instructor" paths, in headless chromium.

From a fresh copy of the course released with the README's instructor commands, the student's
own machine gets the README's nbgrader config and extension commands, and JupyterLab is started
as step 3 says. The page shows the Assignment List and Validate, and no formgrader, Create
Assignment or course list; Validate's "Success!" sits beside the notebook's note on what it does
not check; Submit files the work as the README's student.

The instructor's path: from a fresh copy, steps 1-2 run as written (no --force) on two students'
work submitted as the README's student does in a terminal (filed under the student's own name;
`nbgrader generate_assignment` skips the committed release, and `chapter autograde` registers it
and grades the work); then, with the network unreachable, formgrader's
Manual Grading shows the gradebook's scores (step 3), its Generate and Release Feedback buttons
make feedback with no hidden test and no raw formula (step 4), and `chapter status` in the
instructor's terminal prints the chapter (step 5). Screenshots go to tests/artifacts/.
"""
from __future__ import annotations

import getpass
import html
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tests.course.test_browser import (ARTIFACTS, Lab, browser, formgrader_action, only_student_tools,  # noqa: F401
                                page, quiet_news, shot)
from tests.course.test_offline_pages import NBCONVERT_MATHJAX, RAW_FORMULAS, offline
from tests.test_readme_paths import (COURSE_ID, REPO, clean_env, commands, fresh_course, readme_section,
                                     run, steps, student_setup)
from graders.engine.course_dir import exchange_root

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
        # fetch, as the README's step 4 says: Nbgrader, then Assignment List
        only_student_tools(page, "readme-student-01-nbgrader-menu", then_open="Assignment List")
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
        inbound = exchange_root(course) / COURSE_ID / "inbound"
        deadline = time.monotonic() + 30
        while not any(inbound.glob("*+worked+*")) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sorted(p.name.split("+")[0] for p in inbound.iterdir()) == [env["JUPYTERHUB_USER"]]
    finally:
        lab.stop()


# --- the instructor --------------------------------------------------------------------

def hidden_test_lines() -> list[str]:
    """The lines between BEGIN and END HIDDEN TESTS in w1-memory's source notebook."""
    nb = nbformat.read(REPO / "source" / "worked" / "w1-memory.ipynb", as_version=4)
    found = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "END HIDDEN TESTS" in line:
                inside = False
            elif inside and line.strip():
                found.append(line.strip())
            elif "BEGIN HIDDEN TESTS" in line:
                inside = True
    return found


def submit_as_the_readme_student(course, home, student: str, answer) -> None:
    """README's "A student" set-up with `student` for maria (the README says maria stands for the
    student's course id), then step 7's terminal fetch and submit, with `answer` written between."""
    env, work = student_setup(course, home)
    assert env["JUPYTERHUB_USER"] == "maria" != getpass.getuser()
    config = home / ".jupyter" / "nbgrader_config.py"
    config.write_text(config.read_text().replace('"maria"', f'"{student}"'))
    env["JUPYTERHUB_USER"] = student
    terminal = re.findall(r"`(nbgrader (?:fetch_assignment|submit) worked)`", readme_section("A student"))
    assert terminal == ["nbgrader fetch_assignment worked", "nbgrader submit worked"], terminal
    fetch, submit = terminal
    run(fetch, work, env)
    mine = work / COURSE_ID / "worked" / "w1-memory.ipynb"
    assert mine.exists(), f"fetch put nothing at {mine}"
    answer(mine)
    run(submit, work, env)


def the_solution(path) -> None:
    """The published solution, unchanged: every check passes."""
    nbformat.write(nbformat.read(REPO / "solutions" / "worked" / "w1-memory.ipynb", as_version=4), path)


@pytest.mark.slow
def test_the_instructors_path_as_the_readme_gives_it(tmp_path, page):  # noqa: F811
    """README "An instructor" from a fresh copy: steps 1-2 as written, on a correct and a wrong
    submission; in formgrader, offline, Manual Grading shows the gradebook's scores with the wrong
    one's tests failed (3); Generate and Release Feedback give each student feedback with results,
    no hidden test and no raw formula (4); `chapter status` prints the chapter's status (5)."""
    instructor = steps(readme_section("An instructor"))
    release, grade = commands(instructor[1]), commands(instructor[2])
    assert release[:2] == ["chapter build", "nbgrader generate_assignment worked"], release
    assert any(c.startswith("chapter autograde worked") for c in grade), grade
    assert not any("--force" in line for line in release + grade), "the README's path needs no --force"
    course = fresh_course(tmp_path / "course")
    env = clean_env()
    said = {line: run(line, course, env) for line in release}
    # the committed release is skipped by nbgrader, and registered by the first chapter autograde
    assert "Skipping existing assignment" in said["nbgrader generate_assignment worked"]
    assert (exchange_root(course) / COURSE_ID / "outbound" / "worked" / "w1-memory.ipynb").exists()
    students = {"maria": the_solution, "grace": right_form_wrong_numbers}
    inbound, submitted = exchange_root(course) / COURSE_ID / "inbound", []
    for student, answer in students.items():
        submit_as_the_readme_student(course, tmp_path / student, student, answer)
        submitted.append(student)
        filed = sorted(p.name.split("+")[0] for p in inbound.iterdir())
        assert filed == sorted(submitted), f"the exchange filed the work as {filed}, not as {student}"
    said = {line: run(line, course, env) for line in grade}
    autograde_line = next(c for c in grade if c.startswith("chapter autograde"))
    assert "gradebook: registered 'worked'" in said[autograde_line], said[autograde_line]

    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        scored = {s: gb.find_submission_notebook("w1-memory", "worked", s) for s in students}
        scores = {s: (nb.score, nb.max_score, bool(nb.failed_tests)) for s, nb in scored.items()}
    assert scores["maria"][0] == scores["maria"][1] > 0 and not scores["maria"][2], scores
    assert 0 < scores["grace"][0] < scores["grace"][1] and scores["grace"][2], scores

    home = tmp_path / "instructor"
    quiet_news(home / ".jupyter")
    terminal_settings = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "terminal-extension"
    terminal_settings.mkdir(parents=True)
    # xterm's screen-reader rows hold the terminal's text, so the test can read what it prints
    (terminal_settings / "plugin.jupyterlab-settings").write_text('{"screenReaderMode": true}')
    lab_env = clean_env(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tried = offline(page)
    lab = Lab(course, lab_env, ARTIFACTS / "readme-instructor-lab.log")
    try:
        # steps 1-2, as formgrader shows them: worked released, both submissions collected
        page.goto(lab.url("/formgrader"))
        row = page.locator("#main-table tr", has=page.locator("td", has_text=re.compile("^worked$")))
        row.locator("td.num-submissions", has_text=re.compile(rf"^\s*{len(students)}\s*$")).wait_for()
        assert "released" in row.locator("td.status").inner_text().lower(), row.inner_text()
        shot(page, "readme-instructor-1-2-released-and-collected")

        # step 3: Manual Grading shows every submission's scores, as the gradebook holds them
        page.locator(".nav a", has_text="Manual Grading").click()
        page.get_by_role("link", name="worked", exact=True).click()
        page.get_by_role("link", name="w1-memory", exact=True).click()
        page.locator("tbody tr", has_text="Submission #").first.wait_for()
        page.locator("#toggle_names").click()
        heads = [h.strip() for h in page.locator("thead th").all_inner_texts()]
        for student, (score, max_score, failed) in scores.items():
            cells = page.locator("tbody tr", has_text=student).locator("td")
            shown = [c.strip() for c in cells.all_inner_texts()]
            assert shown[heads.index("Overall Score")] == f"{score:g} / {max_score:g}", (student, shown)
            ticked = cells.nth(heads.index("Tests Failed?")).locator(".glyphicon-ok").count()
            assert ticked == int(failed), (student, shown)
        shot(page, "readme-instructor-3-manual-grading")

        # step 4: Generate Feedback, then Release Feedback, with formgrader's buttons
        page.locator(".nav a", has_text="Manage Assignments").click()
        page.locator("#main-table").get_by_text("worked").first.wait_for()
        formgrader_action(page, "worked", "generate-feedback", "Successfully generated feedback")
        row.locator("td.release-feedback a").click()
        modal = page.locator(".modal-dialog:visible")
        modal.get_by_text("Successfully released feedback of 'worked'.").wait_for(timeout=180_000)
        page.locator(".modal.in").wait_for()
        page.wait_for_timeout(800)           # bootstrap's fade-in, over before the screenshot
        shot(page, "readme-instructor-4-feedback-released")
        modal.locator(".modal-footer button").first.click()
        modal.wait_for(state="hidden")
        released = list((exchange_root(course) / COURSE_ID / "feedback").glob("*.html"))
        assert len(released) == len(students), released
        hidden = hidden_test_lines()
        assert len(hidden) >= 4, hidden
        for student, (score, max_score, _) in scores.items():
            feedback = course / "feedback" / student / "worked" / "w1-memory.html"
            assert feedback.exists(), f"no feedback for {student}"
            page.goto(feedback.as_uri())
            body = page.locator("body")
            text = body.inner_text()
            assert f"w1-memory (Score: {score:.1f} / {max_score:.1f})" in text, (student, text[:600])
            assert ("✗" in text) == (student == "grace"), student
            source = html.unescape(feedback.read_text())
            for line in hidden:
                assert line not in text and line not in source, f"{student}'s feedback shows {line!r}"
            assert body.evaluate(RAW_FORMULAS) == [], f"{student}'s feedback has raw formulas"
            if student == "grace":
                page.get_by_text("✗").first.scroll_into_view_if_needed()
                shot(page, "readme-instructor-4-feedback-wrong-numbers")

        # step 5: `chapter status`, as written, in the instructor's terminal
        status = re.findall(r"`(chapter status)`", instructor[5])
        assert status == ["chapter status"], instructor[5]
        printed = run(status[0], course, env)
        # a fresh copy's first status checks the item, and says so before it starts
        assert "checking 1 of 1 items whose verdict is not current" in printed, printed
        assert re.search(r"II\.8 Training at Scale · M3 \S+ · draft", printed), printed
        assert re.search(r"mathematics\s+1/\d+\s+derive it, then compute it", printed), printed
        assert "minutes of reading" in printed, printed
        activate = re.findall(r"`(\. \.venv/bin/activate)`", readme_section("An instructor"))
        assert activate == [". .venv/bin/activate"], activate
        (course / ".venv").symlink_to(Path(sys.prefix))     # the course's environment, as `make` makes it
        page.goto(lab.url("/lab"))
        page.locator(".jp-LauncherCard", has_text=re.compile("^Terminal$")).click()
        terminal = page.locator(".jp-Terminal:visible")
        screen = terminal.locator(".xterm-accessibility-tree")
        screen.wait_for(state="attached")
        page.wait_for_timeout(2000)          # the shell's prompt
        terminal.locator(".xterm").click()
        page.keyboard.type(f"{activate[0]} && {status[0]}\n")
        screen.get_by_text(re.compile("minutes of reading")).wait_for(state="attached", timeout=300_000)
        on_screen = " ".join(screen.text_content().split())
        for line in printed.splitlines():
            if line.startswith("checking "):      # the first run's alone: the terminal's reads its verdicts
                continue
            assert " ".join(line.split()) in on_screen, (line, on_screen)
        page.wait_for_timeout(1000)
        shot(page, "readme-instructor-5-chapter-status")
        # nothing reached the network; the only attempts are the MathJax <script> that nbconvert's
        # templates (and so nbgrader's feedback) still carry, which the MathML formulas do not need
        assert all(url.startswith(NBCONVERT_MATHJAX) for url in tried), tried
    finally:
        lab.stop()
