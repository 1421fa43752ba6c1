"""A check the worked problems' tests share: a declared mistake is tested where it can be made."""


def assert_loses_points_where_made(problem, mistake, label):
    """A mistake that can be made in variant `label` (its wrong answer is not empty) loses points
    there; one that cannot be made says so with an empty wrong answer, decided from the parameters."""
    params = problem.variants[label]
    wrong = mistake.wrong(params)
    if not wrong:
        return
    result = problem.grade(params, {**problem.solve(params), **wrong})
    assert result.score < result.max_score, (mistake.name, label)
