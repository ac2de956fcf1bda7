"""The sampler over the most recent finished trials (search/study/recent.py): the same suggestions as its sampler
alone until the window fills, then a view of only the last ``window`` finished trials and every unfinished one,
kept up to date between reads on an in-memory study."""

import random
import warnings

import optuna
import pytest

from search.study.recent import RecentIndex, RecentStudy, RecentTrialsSampler

optuna.logging.set_verbosity(optuna.logging.WARNING)


def tpe(seed: int = 3) -> optuna.samplers.TPESampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=5
        )


def run(sampler: optuna.samplers.BaseSampler, n: int) -> tuple[optuna.Study, list[dict]]:
    """``n`` trials of a conditional space, a third of them pruned, told in order."""
    study = optuna.create_study(direction="maximize", sampler=sampler)
    rng, chosen = random.Random(0), []
    for _ in range(n):
        trial = study.ask()
        schema = trial.suggest_categorical("schema", ["single", "power", "anneal"])
        lr = trial.suggest_float("lr", 1e-5, 1e-4, log=True)
        if schema == "power":
            trial.suggest_float("exponent", 0.0, 2.0)
        chosen.append(trial.params)
        score = 0.8 - abs(lr - 3e-5) * 1000 + rng.gauss(0, 0.01)
        if rng.random() < 1 / 3:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, score)
    return study, chosen


def test_below_the_window_it_suggests_exactly_what_its_sampler_does():
    assert run(RecentTrialsSampler(tpe(), window=1000), 40)[1] == run(tpe(), 40)[1]


def test_past_the_window_the_sampler_sees_the_last_finished_trials_and_every_unfinished_one():
    study, _ = run(tpe(), 30)
    running = study.ask()  # unfinished: always seen (the constant liar counts it)
    view = RecentStudy(study, window=10)
    numbers = [t.number for t in view._get_trials(deepcopy=False)]
    assert numbers == list(range(20, 31)) and running.number == 30
    finished = view.get_trials(states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED))
    assert [t.number for t in finished] == list(range(20, 30))
    assert view.directions == study.directions  # everything else is the study's


def test_past_the_window_it_suggests_from_the_view():
    windowed, plain = run(RecentTrialsSampler(tpe(), window=10), 40)[1], run(tpe(), 40)[1]
    assert windowed[:11] == plain[:11] and windowed != plain  # the 12th suggestion sees 10 of 11 finished trials


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="1 or more"):
        RecentTrialsSampler(tpe(), window=0)


def test_the_index_kept_between_reads_is_the_view_a_whole_listing_cuts():
    # trials finish out of order, in every finished state, while others are created: after each change the
    # index (read incrementally) and a whole listing cut at the window see the same trials
    study, rng = optuna.create_study(), random.Random(1)
    index, open_trials = RecentIndex(window=7), []
    for step in range(120):
        if rng.random() < 0.55 or not open_trials:
            open_trials.append(study.ask())
        else:
            trial = open_trials.pop(rng.randrange(len(open_trials)))
            state = rng.choice(
                [optuna.trial.TrialState.COMPLETE] * 3 + [optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL]
            )
            study.tell(trial, 1.0 if state == optuna.trial.TrialState.COMPLETE else None, state=state)
        if step % 3 == 0:
            indexed = [t.number for t in RecentStudy(study, 7, index)._get_trials(deepcopy=False)]
            listed = [t.number for t in RecentStudy(study, 7)._get_trials(deepcopy=False)]
            assert indexed == listed
    finished = sum(t.state.is_finished() for t in study.trials)
    assert finished > 7 and len(open_trials) > 0  # the window was full and some trials were open
    complete = RecentStudy(study, 7, index).get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in complete)
    other = optuna.create_study()  # another in-memory study, with the same study id: read afresh
    other.ask()
    assert [t.number for t in RecentStudy(other, 7, index)._get_trials(deepcopy=False)] == [0]
