"""`irrun generate`: greedy decoding of an optimum-intel decoder folder (logic in irrun/tools/generate.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .options import memory_size
from ..errors import InputError
from .errors import errors_reported


def _token_ids(ctx, param, value):
    if value is None:
        return None
    try:
        return [int(part) for part in value.replace(" ", "").split(",") if part != ""]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of token ids like 1,2,3") from None


@click.command("generate")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--ids", callback=_token_ids, metavar="1,2,3", help="The prompt's token ids.")
@click.option("--prompt", metavar="TEXT", help="The prompt as text: tokenized and detokenized with the folder's "
              "tokenizer IRs as openvino_genai.LLMPipeline does (chat template applied when the tokenizer has one); "
              "prints the generated text.")
@click.option("--no-chat-template", is_flag=True, help="With --prompt: do not apply the chat template.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=16, show_default=True,
              help="Stop after this many new tokens (or at an end-of-sequence id from the folder's config).")
@click.option("--against", type=click.Choice(["openvino"]), default=None,
              help="Run OpenVINO's CPU plugin (f32) side by side: per step the max logit difference and "
                   "whether both choose the same token (needs the openvino package).")
@click.option("--report", type=click.Path(dir_okay=False), metavar="REPORT.html",
              help="With --against openvino: also write a self-contained HTML report of the logit difference and "
                   "token agreement per step (needs irrun[report]).")
@click.option("--max-memory", callback=memory_size, metavar="SIZE", help="Memory budget, as for `irrun run`.")
@click.option("--debug", "show_traceback", is_flag=True, help="Show a traceback on errors.")
def generate_command(folder, ids, prompt, no_chat_template, max_new_tokens, against, report, max_memory,
                     show_traceback):
    """Greedy decoding with the decoder LLM in FOLDER (openvino_model.xml + config.json, as optimum-intel
    exports it): feeds the prompt --ids, then each chosen token, and prints the new token ids. With --against
    openvino, the exit status is 1 when OpenVINO chooses a different token at some step (compared over the
    last position's logits; irrun's token is fed back). With --prompt and --against openvino, LLMPipeline generates
    too and the exit status is 1 when its text differs."""
    from ..tools import generate
    from ..tools.profile import on_terminal

    if report and not against:
        raise click.UsageError("--report goes with --against openvino")
    if report and prompt is not None:
        raise click.UsageError("--report goes with --ids (it shows the logits per step), not --prompt")
    with errors_reported(show_traceback):
        if report:
            from ..tools.report import _plotly

            _plotly()
        if (prompt is None) == (ids is None):
            raise InputError("give the prompt either as --prompt TEXT or as --ids 1,2,3")
        if prompt is not None:
            sys.exit(_generate_text(folder, prompt, not no_chat_template, max_new_tokens, against, max_memory))
        if not ids:
            raise InputError("--ids is empty: give at least one token id")
        if (Path(folder) / generate.TOKENIZER_XML).exists():
            click.echo(f"irrun: note: {generate.TOKENIZER_XML} found; token ids in and out only, the tokenizer "
                       f"is not used", err=True)
        bar = None
        if on_terminal() and sys.stdout.isatty():
            bar = click.progressbar(length=max_new_tokens, label="generating", file=sys.stderr, show_pos=True)
            bar.__enter__()
        lines = []

        def on_step(step):
            if bar is not None:
                bar.update(1)
            if step.reference_token is not None:
                verdict = "same token" if step.agree else f"DIFFERENT (openvino {step.reference_token})"
                lines.append(f"step {step.index}: fed {step.fed}, token {step.token}, max |logit diff| "
                             f"{step.max_logit_diff:.3g}, {verdict}")

        try:
            result = generate.generate_folder(folder, ids, max_new_tokens, against_openvino=against == "openvino",
                                              max_memory=max_memory, on_step=on_step)
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
        for line in lines:
            click.echo(line)
        if against:
            worst = max((s.max_logit_diff for s in result.steps), default=0.0)
            agreed = sum(bool(s.agree) for s in result.steps)
            click.echo(f"openvino: {agreed}/{len(result.steps)} tokens agree, max |logit diff| {worst:.3g}")
            from ..tools.openvino_fusion import explain_generation

            note = explain_generation(folder, ids, max_new_tokens, max_memory)
            if note:
                click.echo(f"note: {note}")
            if report:
                from ..tools.report import write_generate_report

                write_generate_report(report, folder, result, note)
        click.echo(",".join(map(str, result.tokens)))
    sys.exit(0 if result.all_agree else 1)


def _generate_text(folder, prompt, apply_chat_template, max_new_tokens, against, max_memory) -> int:
    from ..tools import text

    generated = text.generate(folder, prompt, max_new_tokens, apply_chat_template, max_memory=max_memory)
    click.echo(generated)
    if not against:
        return 0
    reference = text.openvino_genai_text(folder, prompt, max_new_tokens, apply_chat_template)
    click.echo("openvino: same text" if reference == generated else f"openvino: DIFFERENT text {reference!r}")
    return 0 if reference == generated else 1
