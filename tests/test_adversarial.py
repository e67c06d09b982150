"""Issue 25's adversarial run against this checkout (slow: real runs and processes): every case of
:mod:`adversarial` must end ``clear`` (refused, naming the thing) or ``correct``, never ``unclear``,
``silent``, ``lost`` or ``leftover``. ``python tests/adversarial.py <checkout>`` counts any commit."""

import pytest
from adversarial import CASES, judge
from conftest import REPO


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_an_adversarial_case_is_refused_clearly_or_answered_correctly(case):
    assert judge(case, REPO) in ("clear", "correct")


def test_the_readme_states_how_many_cases_there_are():
    assert f"tries {len(CASES)} hostile cases" in (REPO / "README.md").read_text()
