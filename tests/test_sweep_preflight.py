"""A sweep's pre-flight (kvcore/engine/preflight.py): a job whose trace has a request that can
never run stops the sweep before any job runs, as that job's run would refuse it."""

from __future__ import annotations

import os

import pytest
from test_sweep import PREFIX, _spec
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.sweep.grid import expand
from kvcore.sweep.spec import load_spec

runner = CliRunner()


@pytest.mark.parametrize("body, said", [
    # its checks passed and the job ran to the request, then failed as a job (exit 1)
    ("[grid]\nmax_model_len = [8192, 100]\n",
     ("4: field 'grid.max_model_len': {t}:1: request '0' can never run: prompt of 1152 tokens >= "
     "max_model_len 100")),
    ("[grid]\nnum_blocks = [2000, 5]\n",
     ("4: field 'grid.num_blocks': {t}:1: request '0' can never run: needs 80 blocks of 16 tokens "
     "but only 4 are usable (num_blocks 5)")),
    # skipped one by one, every request: the run's own "no request fits"
    ("[options]\nskip_bad = true\n[grid]\nnum_blocks = [2000, 5]\n",
     ("6: field 'grid.num_blocks': {t}:1: no request fits: needs 80 blocks of 16 tokens but only "
     "4 are usable (num_blocks 5)")),
    ("[options]\nmode = \"cache\"\n[grid]\nnum_blocks = [2000, 5]\n",
     ("6: field 'grid.num_blocks': {t}:1: no request fits: needs 72 blocks of 16 tokens but only "
     "4 are usable (num_blocks 5)")),
])
def test_a_job_whose_requests_can_never_run_stops_the_sweep_before_any_job(tmp_path, body,
                                                                          said):
    import os

    trace = f"{os.getcwd()}/{PREFIX}"
    p = _spec(tmp_path, f'command = "replay"\ntraces = ["{trace}"]\n' + body)
    r = runner.invoke(app, ["sweep", str(p)])
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: {p}:{said.format(t=trace)}\n"
    assert not (tmp_path / "s.results.jsonl").exists()



def test_a_request_that_can_never_run_past_one_that_can(tmp_path):
    """The first refused request in arrival order, as the run meets it; skipped (skip_bad) while
    another runs, the sweep runs, as the replay does."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 32, "output_length": 2}\n'
                     '{"timestamp": 1, "input_length": 1000, "output_length": 2}\n')
    p = _spec(tmp_path, f'traces = ["{trace}"]\n[grid]\nnum_blocks = [100, 10]\n')
    with pytest.raises(InputError) as err:
        expand(load_spec(str(p)))
    assert str(err.value) == (f"{p}:3: field 'grid.num_blocks': {trace}:2: request '1' can never "
                              "run: needs 63 blocks of 16 tokens but only 9 are usable "
                              "(num_blocks 10)")
    p.write_text(p.read_text().replace("[grid]", "[options]\nskip_bad = true\n[grid]"))
    assert len(expand(load_spec(str(p))).jobs) == 2
    # a run stopped at max_steps may never meet the second request: no pre-flight refusal;
    # the first it meets before any step, so a first that can never run is still refused
    p.write_text(p.read_text().replace("skip_bad = true", "max_steps = 3"))
    assert len(expand(load_spec(str(p))).jobs) == 2
    trace.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 2}\n'
                     '{"timestamp": 1, "input_length": 32, "output_length": 2}\n')
    with pytest.raises(InputError) as err:
        expand(load_spec(str(p)))
    assert f"{trace}:1: request '0' can never run" in str(err.value)
    # a cluster refuses when every replica rejected all it was routed, as a replay does
    trace.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 2}\n' * 3)
    p.write_text(f'command = "cluster"\ntraces = ["{trace}"]\n[options]\nskip_bad = true\n'
                 '[grid]\nnum_blocks = [100, 10]\n')
    with pytest.raises(InputError) as err:
        expand(load_spec(str(p)))
    assert str(err.value) == (f"{p}:6: field 'grid.num_blocks': {trace}:1: no request fits: "
                              "needs 63 blocks of 16 tokens but only 9 are usable "
                              "(num_blocks 10)")


@pytest.mark.parametrize("key", ["model_config", "calibration"])
def test_stdin_is_no_file_to_sweep(tmp_path, key):
    # (a job's check read stdin to its end; the next job found it empty: "not valid JSON")
    said = "- (stdin) cannot be swept: every job reads the file again; save it to a file"
    with pytest.raises(InputError) as err:
        load_spec(str(_spec(tmp_path, f'traces = ["{os.getcwd()}/{PREFIX}"]\n[options]\n'
                                      f'{key} = "-"\n[grid]\nnum_blocks = [8, 9]\n')))
    assert str(err.value).endswith(f":3: field 'options.{key}': {said}"), str(err.value)
    r = runner.invoke(app, ["sweep", "--trace", "traces/multiturn-chat.jsonl", "--set",
                            f"{key}=-", "--set", "num_blocks=8,9", "--results",
                            str(tmp_path / "r.jsonl")], input="{}")
    assert (r.exit_code, r.stderr) == (2, f"error: option --set: {key}: {said}\n")
    # a missing file is refused by the flags too, before any job (as a spec refuses it)
    r = runner.invoke(app, ["sweep", "--trace", "traces/multiturn-chat.jsonl", "--set",
                            f"{key}={tmp_path}/none.json,{tmp_path}", "--results",
                            str(tmp_path / "r.jsonl")])
    said = f"error: option --set: {key}: {tmp_path}/none.json does not exist\n"
    assert (r.exit_code, r.stderr) == (2, said)
    assert not (tmp_path / "r.jsonl").exists()


def test_an_option_every_job_sets_is_blamed_with_the_swept_point(tmp_path):
    """`--set num_blocks=40` is refused only where the swept block size makes a request too
    large: the error names that point (docs/sweep.md: "with the rest of the grid point when
    other options are swept"), as it did with two options swept and not with one."""
    args = ["sweep", "--trace", "traces/multiturn-chat.jsonl", "--set", "num_blocks=40",
            "--set", "block_size=512,16", "--results", str(tmp_path / "r.jsonl")]
    r = runner.invoke(app, args)
    assert (r.exit_code, r.stderr) == (2, (
        "error: option --set: num_blocks: traces/multiturn-chat.jsonl:1: request '0' can never "
        "run: needs 77 blocks of 16 tokens but only 39 are usable (num_blocks 40) "
        "(with block_size=16)\n"))
    r = runner.invoke(app, ["sweep", "--trace", "traces/multiturn-chat.jsonl", "--set",
                            "max_num_seqs=4096", "--set", "num_blocks=512,1024", "--results",
                            str(tmp_path / "r.jsonl")])
    assert r.stderr.endswith("(with num_blocks=512)\n"), r.stderr
    assert not (tmp_path / "r.jsonl").exists()
