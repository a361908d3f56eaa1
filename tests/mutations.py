"""Break one line of a paper's mechanism in a scratch copy of the repository and check that the test written for
it goes red. Each mutation is the bug a careful reader could make (or once made); the test named with it must fail.

    HF_HUB_OFFLINE=1 .venv/bin/python tests/mutations.py            # every mutation (about 15 minutes on 2 cores)
    HF_HUB_OFFLINE=1 .venv/bin/python tests/mutations.py --only cmlm_detached_prefix

Not collected by pytest (the name does not start with ``test_``); it runs pytest itself, once per mutation.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    where: str  # FILE::SCOPE: the function or class (dotted, e.g. ``Trainer.train``) whose body holds the line
    before: str  # the code broken, matched token by token within SCOPE: any layout of the same code matches
    after: str
    test: str  # pytest node id, relative to the repository root

    @property
    def file(self) -> str:
        return self.where.partition("::")[0]

    @property
    def scope(self) -> str:
        return self.where.partition("::")[2]


class StaleMutation(Exception):
    """A mutation whose code is not found exactly once in its scope."""


LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def code_tokens(text: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``text`` less layout, comments and a comma before a closing bracket (a formatter's "magic
    trailing comma"); None where ``text`` is no whole run of Python tokens (a fragment of a string or a
    docstring), which is then matched as text with any whitespace between its words."""
    try:
        tokens = [token for token in tokenize.generate_tokens(io.StringIO(text).readline) if token.type not in LAYOUT]
    except (tokenize.TokenError, SyntaxError):
        return None
    tokens = [
        token
        for token, following in zip(tokens, [*tokens[1:], None], strict=True)
        if not (token.string == "," and following is not None and following.string in ")]}")
    ]
    return tokens if tokens and all(token.type != tokenize.ERRORTOKEN for token in tokens) else None


def scope_lines(source: str, scope: str, file: str) -> tuple[int, int]:
    """The first and last line (1-based) of the function or class ``scope`` (dotted) in ``source``; the whole
    file for ``""``."""
    if not scope:
        return 1, source.count("\n") + 1
    nodes = ast.parse(source).body
    found = None
    for name in scope.split("."):
        found = next(
            (
                node
                for node in nodes
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name
            ),
            None,
        )
        if found is None:
            raise StaleMutation(f"{file}: no {scope}")
        nodes = found.body
    first = min([found.lineno, *(decorator.lineno for decorator in found.decorator_list)])
    return first, found.end_lineno


def locate(source: str, mutation: Mutation) -> tuple[int, int, bool]:
    """The character span of ``mutation.before`` in its scope of ``source``, and whether it was found by tokens: its
    code tokens in the same order whatever the layout, else (a fragment of a string or a docstring, code inside an
    f-string) its words with any whitespace between them. Raises `StaleMutation` unless it is found exactly once."""
    first, last = scope_lines(source, mutation.scope, mutation.file)
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    begin, end = starts[first - 1], starts[min(last, len(starts) - 1)]
    region = source[begin:end]
    wanted, spans = code_tokens(mutation.before), []
    if wanted is not None:
        lines = [0]
        for line in region.splitlines(keepends=True):
            lines.append(lines[-1] + len(line))
        tokens = code_tokens(region) or []
        strings = [(token.type, token.string) for token in wanted]
        n = len(strings)
        spans = [
            (
                lines[tokens[i].start[0] - 1] + tokens[i].start[1],
                lines[tokens[i + n - 1].end[0] - 1] + tokens[i + n - 1].end[1],
            )
            for i in range(len(tokens) - n + 1)
            if [(token.type, token.string) for token in tokens[i : i + n]] == strings
        ]
    by_tokens = bool(spans)
    if not spans:
        words = mutation.before.split()
        spans = [match.span() for match in re.finditer(r"\s+".join(map(re.escape, words)), region)] if words else []
    if len(spans) != 1:
        raise StaleMutation(f"{mutation.name}: {mutation.where} holds its code {len(spans)} times, not once")
    return begin + spans[0][0], begin + spans[0][1], by_tokens


def mutate(source: str, mutation: Mutation) -> str:
    """``source`` with ``mutation`` applied: the span `locate` finds replaced by ``after``. What ``before`` holds
    around its code (indentation, a newline, a comment) is replaced too where the source has it there, else kept
    out of ``after``."""
    start, end, by_tokens = locate(source, mutation)
    before, after = mutation.before, mutation.after
    tokens = code_tokens(before)
    if not by_tokens:
        head = before[: len(before) - len(before.lstrip())]
        tail = before[len(before.rstrip()) :]
    else:
        lines = [0]
        for line in before.splitlines(keepends=True):
            lines.append(lines[-1] + len(line))
        head = before[: lines[tokens[0].start[0] - 1] + tokens[0].start[1]]
        tail = before[lines[tokens[-1].end[0] - 1] + tokens[-1].end[1] :]
    if head and source[start - len(head) : start] == head:
        start -= len(head)
    elif head and after.startswith(head):
        after = after[len(head) :]
    if tail and source[end : end + len(tail)] == tail:
        end += len(tail)
    elif tail and after.endswith(tail):
        after = after[: len(after) - len(tail)]
    return source[:start] + after + source[end:]


M = "hf_xlsr/modeling/"
KEYS = "tests/test_languages_as_keys.py::"
OLD_CHECKPOINT = KEYS + "test_a_checkpoint_written_by_0_2_0_loads_with_one_warning_per_old_name"
EVALUATE_MANY = (
    "tests/test_multilingual.py::test_evaluate_scores_every_pair_of_many_languages_with_a_table_and_a_heat_map"
)
GRADCACHE = "tests/test_dual_momentum_gradcache.py::"
SHARDS = "tests/test_mining_shards.py::"
DEVICE = "tests/test_mining_device.py::"
POSITIONS = "tests/test_export.py::test_inputs_are_cut_to_what_the_position_table_takes"
THIRD_LANGUAGE = "tests/test_multilingual.py::test_a_querys_translation_in_a_third_language_is_never_its_negative"
PRECISION = "tests/test_precision.py::test_bf16_autocast_keeps_contrastive_scores_and_gradients_in_float32"
DDP = (
    "tests/test_multiprocess.py::"
    "test_a_plain_trainer_under_ddp_broadcasts_no_queue_and_gathers_keys_once_per_micro_batch"
)
SAMPLE = "tests/test_cli_and_arguments.py::test_training_and_evaluate_score_one_held_out_sample"
BACKEND = "tests/test_backends.py::test_each_backend_gives_the_float32_vectors_within_its_precision"
SCAN = "tests/test_mining.py::test_scanned_lists_find_what_a_float64_search_of_the_same_lists_finds"
ONE_ENCODING = "tests/benchmarks/test_bench_mining_e2e.py::test_both_arms_mine_one_encoding_timed_once"
GPU_OOM = "tests/benchmarks/test_gpu_suite.py::test_an_arm_out_of_memory_is_a_row_and_the_others_are_timed_interleaved"
PAIRING = "tests/test_mining.py::test_one_to_one_pairing_is_the_best_first_loop_without_its_loop"
CENTRED = "tests/test_mining.py::test_an_approximate_index_searches_each_language_centred_on_its_own_mean"
STORED = "tests/benchmarks/test_bench_queue.py::"
LINE_BUDGET = "tests/test_cli_and_arguments.py::test_a_short_train_and_encode_print_within_their_line_budget"
QUEUE_PROPERTY = (
    "tests/test_properties.py::test_the_queue_is_the_reference_after_any_enqueue_commit_rollback_and_wrap_around"
)
QUEUE_VS_BATCH = "tests/benchmarks/test_queue_vs_batch.py::"
RESULTS_FILE = "tests/benchmarks/test_results_file.py::"
CACHED_EXACT = (
    "tests/test_cached_queue_loss.py::"
    "test_the_cached_loss_gives_the_plain_losss_value_gradients_and_queues[symmetric pairs with meaning ids]"
)
FIRST_LOG = "tests/test_trainer.py::test_the_first_log_line_of_a_queue_holds_no_statistic_of_an_empty_queue"
FIRST_HOUR = "tests/test_first_hour.py::"
FAULTS = "tests/test_faults.py::"
CATALOGUES = "tests/test_catalogues.py::"
HYPHENS = "tests/test_multilingual.py::test_codes_with_hyphens_name_their_pairs_and_stack"
EXTENSION = "tests/benchmarks/test_protocol.py::test_a_best_rate_at_an_end_runs_the_rate_beyond_it_up_to_two_steps"
GRID_REPORT = (
    "tests/benchmarks/test_multilingual_grid.py::"
    "test_the_report_reads_each_language_of_each_seed_at_the_pick_and_pairs_the_arms_by_seed"
)
LOST = "tests/test_nothing_lost.py::"
EXPORT_TARGET = LOST + "test_export_refuses_a_folder_of_other_files_the_model_and_its_parent_and_replaces_only_its_own"
SECOND_RUN = LOST + "test_a_second_run_in_a_used_folder_is_refused_resumes_only_its_own_run_and_overwrites_when_told"
ROW_PER_LINE = LOST + "test_encode_gives_row_i_for_line_i_blank_lines_included_and_counts_the_lines_it_cuts"
MUTATIONS = [
    # MoCo-BERT and every queue
    Mutation("moco_positive_from_query_encoder", M + "modeling_dual_momentum.py::DualMomentumModel.forward",
             'k_y = self.momentum_keys(*sides["y"], side="y")',
             "k_y = h_y.detach()",
             "tests/test_dual_momentum_model.py::test_positive_keys_come_from_the_momentum_encoder"),
    Mutation("queue_pointer_not_saved", M + "queue.py::MemoryQueue.__init__",
             'self.register_buffer("ptr", torch.zeros((), dtype=torch.long))',
             'self.register_buffer("ptr", torch.zeros((), dtype=torch.long), persistent=False)',
             "tests/test_trainer.py::test_resume_continues_exactly"),
    Mutation("keys_into_the_other_languages_queue", M + "momentum.py::MomentumContrast.enqueue",
             "zip((keys_x, keys_y), (self.queue_x, self.queue_y), strict=True)",
             "zip((keys_x, keys_y), (self.queue_y, self.queue_x), strict=True)",
             "tests/test_dual_momentum_model.py::test_each_languages_keys_enter_its_own_queue"),
    Mutation("ema_in_bfloat16_allowed", M + "ema.py::ema_update_", "    if low:\n        raise ValueError(",
             "    if False:\n        raise ValueError(",
             "tests/test_dual_momentum_model.py::test_ema_refuses_low_precision_momentum_weights"),
    Mutation("ema_after_non_finite_gradients", "hf_xlsr/trainers/callbacks.py::MomentumCallback.on_optimizer_step",
             "if skipped or not self._finite_gradients:", "if skipped:",
             "tests/test_trainer.py::test_a_step_with_non_finite_gradients_leaves_no_trace_in_queue_or_momentum_encoder"),
    Mutation("non_finite_keys_queued", M + "momentum.py::MomentumContrast.enqueue",
             "if not bool(rows[:, -1].min() > 0):", "if False:",
             "tests/test_dual_momentum_model.py::test_a_non_finite_loss_queues_nothing"),
    Mutation("no_warning_without_ema", M + "momentum.py::MomentumContrast.enqueue",
             "and not self._warned:", "and False:",
             "tests/test_trainer.py::test_a_plain_trainer_that_never_runs_the_ema_is_warned"),
    Mutation("own_example_not_masked", M + "functional.py::info_nce",
             "queue_logsumexp(q, queue, scale, query_ids, queue_ids)",
             "queue_logsumexp(q, queue, scale, None, queue_ids)",
             "tests/test_queue_and_losses.py::test_info_nce_with_in_batch_keys_margin_queue_and_example_ids"),
    Mutation("blocked_gradient_not_rescaled", M + "functional.py::_QueueLogSumExp.forward",
             "weighted.mul_(rescale[:, None]).add_(float32_product(weights, block))",
             "weighted.add_(float32_product(weights, block))",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("blocked_sum_not_rescaled", M + "functional.py::_QueueLogSumExp.forward",
             "total.mul_(rescale).add_(weights.sum(dim=1))",
             "total.add_(weights.sum(dim=1))",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("masked_rows_shifted_by_minus_infinity", M + "functional.py::_QueueLogSumExp.forward",
             "shift = new_max.clamp(min=lowest)",
             "shift = new_max",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("lightweight_queue_live_positives", M + "modeling_lightweight.py::LightweightDualTransformer.forward",
             "keys_y = self.momentum_keys(target_input_ids, target_attention_mask)",
             'keys_y = embeddings["target_embeddings"].detach()',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    Mutation("cmlm_queue_live_positives", M + "modeling_cmlm.py::CmlmModel.forward",
             "keys_y = self.momentum_keys(target_input_ids, target_attention_mask)",
             'keys_y = parts["target_embeddings"].detach()',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    Mutation("hictl_queue_live_positives", M + "modeling_hictl.py::HictlForPreTraining.forward",
             "                        self.momentum_keys(target_input_ids, target_attention_mask),\n",
             '                        parts["target_embeddings"].detach(),\n',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    # Lightweight
    Mutation("ugt_target_from_own_bag", M + "modeling_lightweight.py::LightweightDualTransformer._generative_loss",
             "target_u = unified_generative_target(bag_y,", "target_u = unified_generative_target(bag_x,",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("ugt_half_share_on_the_wrong_side",
             M + "modeling_lightweight.py::LightweightDualTransformer._generative_loss",
             "masked_token, masked_side == 0)", "masked_token, masked_side == 1)",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("l_sim_on_u_u", M + "modeling_lightweight.py::LightweightDualTransformer.forward",
             "sim = in_batch_similarity_loss(u, v)",
             "sim = in_batch_similarity_loss(u, u)",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("l_sim_averaged", M + "functional.py::in_batch_similarity_loss",
             ".clamp(min=eps - 1)).sum()", ".clamp(min=eps - 1)).mean()",
             "tests/test_lightweight.py::test_alignment_and_similarity_losses_match_float64_references"),
    Mutation("fc_linear_only", M + "modeling_lightweight.py::LightweightDualTransformer.generative_logits",
             "transformed = self.generative_norm(F.silu(self.generative_dense(states)))",
             "transformed = self.generative_dense(states)",
             "tests/test_lightweight.py::test_generative_logits_use_the_fc_layer_and_the_input_embeddings"),
    # HICTL
    Mutation("hictl_uniform_negatives", M + "modeling_hictl.py::HictlForPreTraining.word_level_loss",
             "similarities, excluded, self.config.num_negatives, self.config.negative_sampling_temperature",
             "similarities, excluded, self.config.num_negatives, 1e9",
             "tests/test_hictl.py::test_sampled_word_negatives_are_hard"),
    Mutation("hictl_word_query_not_cls", M + "modeling_hictl.py::HictlForPreTraining.forward",
             "self.word_level_loss(states[:, 0],", "self.word_level_loss(states[:, 1],",
             "tests/test_hictl.py::test_word_level_query_is_the_pairs_first_token"),
    Mutation("hictl_monolingual_copy_visible", "hf_xlsr/trainers/collators.py::HictlCollator.__call__",
             "[masked_x[j] for j in order],", "[x_ids[j] for j in order],",
             "tests/test_hictl.py::test_monolingual_mlm_cannot_copy_from_the_reordered_half"),
    Mutation("hictl_whitespace_reordering_only", "hf_xlsr/trainers/collators.py::HictlCollator._reordering",
             "if len(groups) < 2:", "if False:",
             "tests/test_hictl.py::test_monolingual_sentences_without_spaces_are_reordered_by_pieces"),
    # CMLM
    Mutation("cmlm_detached_prefix", M + "modeling_cmlm.py::CmlmModel.cmlm_loss",
             "projected = self.project(self.sentence_vector(first_ids, first_mask))",
             "projected = self.project(self.sentence_vector(first_ids, first_mask).detach())",
             "tests/test_cmlm.py::test_the_first_sentences_encoder_gets_the_cmlm_gradient"),
    Mutation("cmlm_prefix_masked_out", M + "modeling_cmlm.py::CmlmModel.cmlm_loss",
             "second_mask.new_ones(projected.shape[:2])",
             "second_mask.new_zeros(projected.shape[:2])", "tests/test_cmlm.py::test_cmlm_uses_the_first_sentence"),
    Mutation("cmlm_new_head_not_warmed", "hf_xlsr/trainers/trainer.py::XlsrTrainer.__init__",
             'self.add_callback(EncoderFreezeCallback(schedule["encoder_frozen_steps"]))', "pass",
             "tests/test_cmlm.py::test_a_new_masked_lm_head_trains_alone_first"),
    Mutation("cmlm_stages_undeclared", M + "modeling_cmlm.py::CmlmModel",
             "second_stage_step = SECOND_STAGE_STEP", "second_stage_step = None",
             "tests/test_cmlm.py::test_the_trainer_switches_stages_of_the_models_that_declare_them"),
    Mutation("cmlm_s1_s2_swapped", M + "configuration_cmlm.py",
             '{"s1": "cmlm+br", "s2": "cmlm->br"', '{"s1": "cmlm->br", "s2": "cmlm+br"',
             "tests/test_cmlm.py::test_schedules_switch_losses_at_the_second_stage"),
    Mutation("rows_not_numbered", "hf_xlsr/trainers/trainer.py::number_examples",
             'return dataset.add_column("example_id", list(range(len(dataset))))', "return dataset",
             "tests/test_trainer.py::test_training_rows_are_numbered_for_the_queue_and_a_queue_as_large_as_an_epoch_is_flagged"),
    # MomentumQueueLoss for sentence-transformers
    Mutation("st_loss_live_keys", M + "momentum.py::MomentumMixin.momentum_keys",
             "self._key_vector(self.momentum_contrast.momentum, *inputs",
             "self._key_vector(self._key_modules(), *inputs",
             "tests/test_st_loss.py::test_the_loss_takes_its_positives_and_negatives_from_the_momentum_copy"),
    Mutation("st_loss_state_not_restored",
             "hf_xlsr/losses/MomentumQueueCallback.py::MomentumQueueCallback.on_train_begin",
             "load_model(self.target.momentum_contrast, path, device=str(next(self.target.parameters()).device))",
             "pass",
             "tests/test_st_loss.py::test_resume_restores_queue_pointer_and_momentum_model_exactly"),
    Mutation("st_loss_without_callback_allowed", "hf_xlsr/losses/MomentumQueueLoss.py::MomentumQueueLoss.__init__",
             "strict=True, sides=sides",
             "strict=False, sides=sides",
             "tests/test_st_loss.py::test_training_without_the_callback_is_refused"),
    Mutation("router_card_shows_encode_query", "hf_xlsr/export.py::export_sentence_transformers",
             "exported.model_card_data.ir_model = False", "pass",
             "tests/test_export.py::test_a_dual_encoder_exports_one_folder_routed_by_language"),
    # Evaluation and configuration
    Mutation("probe_on_raw_vectors", "hf_xlsr/evaluation/probe.py::LinearProbeEvaluator.evaluate",
             "classifier = make_pipeline(StandardScaler(), LogisticRegression(",
             "classifier = make_pipeline(LogisticRegression(",
             "tests/test_evaluation.py::test_linear_probe_sees_classes_under_a_dominant_shared_direction"),
    Mutation("paper_recipe_overrides_the_run", "hf_xlsr/registry.py::paper_recipe",
             "if name not in given", "if True",
             "tests/test_cli_and_arguments.py::test_one_rule_for_training_values_explicit_then_the_papers_recipe"),
    Mutation("paper_batch_not_shared_over_processes", "hf_xlsr/registry.py::paper_recipe",
             "max(1, total // world_size)", "total",
             "tests/test_cli_and_arguments.py::test_one_rule_for_training_values_explicit_then_the_papers_recipe"),
    Mutation("collator_settings_not_passed", "hf_xlsr/trainers/run.py::run_training",
             "**data_args.collator_settings(entry.collator_settings)", "",
             "tests/test_collator_settings.py::test_a_runs_collator_settings_reach_its_collator_and_stay_out_of_its_config"),
    Mutation("old_collator_field_kept", M + "configuration_dual_momentum.py::drop_moved_fields",
             'f"{type(config).__name__}: {name} {kwargs.pop(name)!r} ignored: it is a setting of the data "',
             'f"{type(config).__name__}: {name} {kwargs.get(name)!r} ignored: it is a setting of the data "',
             "tests/test_collator_settings.py::test_a_configuration_an_earlier_version_saved_loads_with_one_warning_per_collator_field"),
    Mutation("collator_range_unchecked", "hf_xlsr/trainers/arguments.py::DataArguments.__post_init__",
             "check_collator_settings(self)", "pass",
             "tests/test_collator_settings.py::test_a_collator_setting_is_checked_where_it_was_given_before_anything_loads"),
    Mutation("foreign_collator_setting_accepted", "hf_xlsr/trainers/config_file.py::check_settings_taken",
             "if getattr(data_args, name) is not None:", "if False:",
             "tests/test_collator_settings.py::test_a_collator_setting_is_checked_where_it_was_given_before_anything_loads"),
    Mutation("foreign_schedule_setting_accepted", "hf_xlsr/trainers/config_file.py::check_settings_taken",
             "    if refused:", "    if False:",
             "tests/test_collator_settings.py::test_a_schedule_setting_is_checked_where_it_was_given_before_anything_loads"),
    Mutation("schedule_argument_ignored", "hf_xlsr/trainers/trainer.py::schedule_steps",
             "steps[name] = getattr(model, name) if given is None else given", "steps[name] = getattr(model, name)",
             "tests/test_cmlm.py::test_the_trainer_switches_stages_of_the_models_that_declare_them"),
    Mutation("mini_batches_not_handed_to_the_model", "hf_xlsr/trainers/trainer.py::XlsrTrainer.__init__",
             "model.mini_batch_size = args.mini_batch_size", "pass",
             GRADCACHE + "test_mini_batches_are_a_training_argument_not_a_configuration_field"),
    Mutation("old_schedule_field_kept", M + "configuration_dual_momentum.py::drop_moved_fields",
             "    for name, argument in FORMER_SCHEDULE_FIELDS.items():\n        if name in kwargs:",
             "    for name, argument in FORMER_SCHEDULE_FIELDS.items():\n        if False:",
             "tests/test_cmlm.py::test_schedule_settings_are_training_arguments_and_old_configs_load_with_a_warning"),
    Mutation("adapters_not_saved_beside_the_model", M + "adapters.py::FrozenParametersMixin.save_pretrained",
             "self.save_adapters(Path(save_directory) / ADAPTER_FOLDER)", "pass",
             "tests/test_lora.py::test_adapter_settings_live_in_peft_files_not_in_the_config"),
    Mutation("saved_adapters_not_rebuilt", M + "adapters.py::FrozenParametersMixin.from_pretrained",
             'kwargs["lora"] = saved_lora(pretrained_model_name_or_path, **hub)', 'kwargs["lora"] = None',
             "tests/test_lora.py::test_adapter_settings_live_in_peft_files_not_in_the_config"),
    Mutation("old_lora_field_ignored", M + "adapters.py::saved_lora",
             'return config.get("lora")', "return None",
             "tests/test_lora.py::test_adapter_settings_live_in_peft_files_not_in_the_config"),
    Mutation("bad_lora_run_field_accepted", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "lora_config(model_args.lora)", "pass",
             "tests/test_lora.py::test_a_runs_lora_is_a_run_field_checked_before_anything_loads"),
    Mutation("report_imports_a_measuring_script", "benchmarks/report/cost.py::memory_table",
             'return memory_rows(shared.load("memory.json")) + "\\n"',
             'from bench_memory import VARIANTS  # noqa: F401\n'
             '    return memory_rows(shared.load("memory.json")) + "\\n"',
             "tests/test_layout.py::test_the_report_reads_results_files_and_imports_no_measuring_script"),
    Mutation("child_answer_first_not_last", "benchmarks/common.py::child_result",
             "return json.loads(rows[-1][len(RESULT) :])", "return json.loads(rows[0][len(RESULT) :])",
             "tests/benchmarks/test_child_runner.py::test_the_last_row_a_child_answers_comes_back"),
    Mutation("failed_child_read_as_answered", "benchmarks/common.py::child_result",
             "if process.returncode or not rows:", "if not rows:",
             "tests/benchmarks/test_child_runner.py::test_a_child_that_fails_or_answers_nothing_stops_the_run_naming_it"),
    Mutation("old_run_settings_not_moved", "hf_xlsr/trainers/run_folder.py::moved_setting",
             'return f"training.{FORMER_SCHEDULE_FIELDS[name]}"', "return key",
             "tests/test_registry.py::test_a_run_started_with_settings_in_model_config_resumes_where_they_live_now"),
    Mutation("schedule_left_out_of_run_settings", "hf_xlsr/trainers/run_folder.py",
             '"momentum_schedule", "second_stage_step",', '"momentum_schedule",',
             "tests/test_registry.py::test_a_runs_settings_hold_its_collator_schedule_and_lora"),
    Mutation("range_error_blames_the_command_line", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "from_file = name in known and name not in _given_on_command_line(command_line)", "from_file = False",
             "tests/test_collator_settings.py::test_a_collator_setting_is_checked_where_it_was_given_before_anything_loads"),
    Mutation("run_record_without_its_collator", "hf_xlsr/trainers/run.py::run_record",
             'training["collator"] = ", ".join(f"{name}={value}" for name, value in used.items())', "pass",
             "tests/test_collator_settings.py::test_a_runs_collator_settings_reach_its_collator_and_stay_out_of_its_config"),
    Mutation("run_takes_the_first_types_recipe", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "paper = paper_recipe(entry.name, given, world_size)",
             "paper = paper_recipe(\"xlsr_dual_momentum\", given, world_size)",
             "tests/test_registry.py::test_a_type_added_by_one_entry_trains_loads_and_gets_its_card"),
    Mutation("registry_skips_the_auto_classes", "hf_xlsr/registry.py::register_model_type",
             "entry.auto_class.register(entry.config_class, entry.model_class, exist_ok=True)", "pass",
             "tests/test_registry.py::test_a_type_added_by_one_entry_trains_loads_and_gets_its_card"),
    Mutation("registry_reference_not_imported", "hf_xlsr/registry.py::ModelType.part",
             "value = getattr(importlib.import_module(module), function)", "pass",
             "tests/test_registry.py::test_a_type_added_by_one_entry_trains_loads_and_gets_its_card"),
    Mutation("old_type_name_not_translated", "hf_xlsr/registry.py::get_model_type",
             "name = _OLD_NAMES[name]", "pass",
             "tests/test_registry.py::test_an_earlier_name_loads_with_a_warning_naming_todays"),
    Mutation("old_type_name_kept_by_the_run", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "model_args.model_type, model_args.model_config = entry.name, model_config",
             "model_args.model_config = model_config",
             "tests/test_registry.py::test_an_earlier_name_loads_with_a_warning_naming_todays"),
    Mutation("old_run_folder_type_refused", "hf_xlsr/trainers/run_folder.py::check_same_run",
             'saved["model_type"] = current_name(saved["model_type"])', "pass",
             "tests/test_registry.py::test_a_run_an_earlier_version_started_resumes_under_todays_name"),
    Mutation("one_name_two_types", "hf_xlsr/registry.py::register_model_type",
             "if owner not in (None, entry.name):", "if False:",
             "tests/test_registry.py::test_a_name_is_one_types_and_the_configuration_says_it"),
    Mutation("card_head_ignores_the_type", "hf_xlsr/hub.py::render_model_card",
             'else entry.exported_head', 'else None',
             "tests/test_hub.py::test_cards_of_every_model_family_render"),
    Mutation("saved_training_fields_kept", M + "configuration_dual_momentum.py::drop_moved_fields",
             "if kwargs.pop(name, None) is not None]", "if kwargs.get(name) is not None]", OLD_CHECKPOINT),
    # Precision, distributed engines, the host's view of the queue
    Mutation("scores_under_autocast", M + "functional.py::float32_scores.without_autocast",
             "with torch.autocast(device_type=device, enabled=False):",
             "with torch.autocast(device_type=device, enabled=torch.is_autocast_enabled(device)):",
             PRECISION + "[info_nce_with_queue]"),
    Mutation("momentum_keys_switch_the_callers_autocast_off", M + "momentum.py::MomentumMixin.momentum_keys",
             "context = contextlib.nullcontext()", "context = torch.autocast(device, enabled=False)",
             "tests/test_precision.py::test_under_a_callers_bf16_autocast_the_momentum_keys_are_bf16_too[cmlm]"),
    Mutation("momentum_loss_keys_ignore_the_trainers_precision",
             "hf_xlsr/losses/MomentumQueueCallback.py::MomentumQueueCallback.on_train_begin",
             "self.target.key_autocast = torch.bfloat16 if args.bf16 else torch.float16 if args.fp16 else None",
             "self.target.key_autocast = None",
             "tests/test_st_loss.py::test_under_bf16_training_the_momentum_forward_runs_in_bf16_as_the_live_one"),
    Mutation("cached_rows_scored_against_the_first_rows_keys",
             "hf_xlsr/losses/MomentumQueueLoss.py::MomentumQueueLoss._loss_of_rows",
             "exclude=exclude, offset=start,", "exclude=exclude,", CACHED_EXACT),
    Mutation("cached_parts_not_weighted_by_their_rows",
             "hf_xlsr/losses/CachedMomentumQueueLoss.py::CachedMomentumQueueLoss.calculate_loss",
             "part = self._loss_of_rows(queries, candidates, anchor_keys, ids, n, start) * (len(chunks[0]) / n)",
             "part = self._loss_of_rows(queries, candidates, anchor_keys, ids, n, start)", CACHED_EXACT),
    Mutation("tatoeba_mined_from_english", "hf_xlsr/evaluation/tatoeba.py::TatoebaEvaluator.evaluate",
             "mining_f1(encoder(sentences, self.language_of[code]), encoder(english, \"en\"))",
             "mining_f1(encoder(english, \"en\"), encoder(sentences, self.language_of[code]))",
             "tests/test_tatoeba.py::test_the_score_is_the_weighted_f1_of_the_nearest_english_sentence"),
    Mutation("hictl_forward_documents_sides", M + "modeling_hictl.py::HictlForPreTraining.forward",
             "            source_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):",
             "            x_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):",
             KEYS + "test_docstrings_of_the_public_api_name_the_arguments_the_signatures_take"),
    Mutation("blank_lines_read_as_rows", "hf_xlsr/data/bitext.py::_lines",
             "        if text.strip():\n            yield number", "        if True:\n            yield number",
             "tests/test_data.py::test_blank_lines_are_skipped_and_counted_as_pandas_and_datasets_skip_them[tsv]"),
    Mutation("earlier_option_spelling_ignored", "hf_xlsr_cli.py::RenamedOption.__call__",
             "        setattr(namespace, self.dest, values)",
             "        pass",
             "tests/test_mining.py::test_the_earlier_spellings_of_mine_and_export_options_still_work_with_a_notice"),
    Mutation("blocked_gradient_saved_in_queue_dtype", M + "functional.py::_QueueLogSumExp.forward",
             "ctx.save_for_backward((weighted * inverse[:, None]).to(queries.dtype))",
             "ctx.save_for_backward((weighted * inverse[:, None]).to(keys.dtype))",
             "tests/test_queue_and_losses.py::test_blocked_scoring_of_a_float16_queue_matches_its_float32_values"),
    Mutation("cpu_block_products_in_its_storage_dtype", M + "functional.py::_QueueLogSumExp.forward",
             "                block = block.to(q.dtype)  # a no-op", "                block = block  # a no-op",
             "tests/test_queue_and_losses.py::test_blocked_scoring_of_a_float16_queue_matches_its_float32_values"),
    Mutation("momentum_weights_as_parameters", M + "ema.py::momentum_copy",
             "if parameter is not None and id(parameter) not in shared:", "if False:",
             "tests/test_multiprocess.py::test_deepspeed_zero2_in_bf16_trains_a_momentum_encoder_with_a_float32_ema"),
    Mutation("momentum_state_broadcast_by_ddp", M + "distributed.py::keep_momentum_state_out_of_ddp",
             "nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, names)", "pass",
             DDP),
    Mutation("keys_gathered_one_tensor_at_a_time", M + "momentum.py::MomentumContrast.enqueue",
             "rows = gather_rows(torch.cat(columns, dim=1))",
             "rows = torch.cat([gather_rows(column) for column in columns], dim=1)", DDP),
    Mutation("pointers_read_from_the_device", M + "queue.py::HostIntegers._host_value",
             "if name not in cache or cache[name][0] != stamp:",
             "if True:", "tests/test_dual_momentum_model.py::test_a_training_step_reads_one_value_from_the_device"),
    Mutation("gradient_norm_computed_again", "hf_xlsr/trainers/trainer.py::XlsrTrainer._get_grad_norm",
             "self._momentum_callback.gradient_norm = grad_norm", "pass",
             "tests/test_trainer.py::test_a_step_with_non_finite_gradients_leaves_no_trace_in_queue_or_momentum_encoder"
             "[clipping]"),
    # MomentumQueueLoss and sentence-transformers' conventions
    Mutation("st_loss_directions_summed", "hf_xlsr/losses/MomentumQueueLoss.py::MomentumQueueLoss._loss_of_rows",
             "loss = (loss + backward.loss) / 2",
             "loss = loss + backward.loss",
             "tests/test_st_loss.py::test_mnrl_is_this_loss_with_an_empty_queue_and_live_keys[2-True]"),
    Mutation("st_loss_anchor_queue_without_symmetry",
             "hf_xlsr/losses/MomentumQueueLoss.py::MomentumQueueLoss.__init__",
             'sides = ("x", "y") if symmetric else ("y",)', 'sides = ("x", "y")',
             "tests/test_st_loss.py::test_without_symmetry_the_anchors_get_no_momentum_forward_and_no_queue"),
    Mutation("st_loss_hard_negatives_dropped", "hf_xlsr/losses/MomentumQueueLoss.py::MomentumQueueLoss._loss_of_rows",
             "exclude = ~own.repeat(1, columns)", "exclude = ~torch.nn.functional.pad(own, (0, n * (columns - 1)))",
             "tests/test_st_loss.py::test_hard_negatives_count_without_in_batch_negatives"),
    Mutation("st_loss_labels_drop_hard_negatives", "hf_xlsr/losses/MomentumQueueLoss.py::candidate_ids",
             "return torch.cat([ids, ids.new_full((len(ids) * (columns - 1),), -1)])", "return ids.repeat(columns)",
             "tests/test_st_loss.py::test_labels_keep_every_hard_negative"),
    Mutation("pair_files_keep_their_own_meanings", "hf_xlsr/data/multilingual.py::shared_meanings",
             "                    parent[other] = root\n", "                    pass\n",
             "tests/test_multilingual.py::test_a_pivot_sentence_shared_by_two_pair_files_is_one_meaning"),
    Mutation("verse_id_forgets_the_chapter", "hf_xlsr/data/corpora.py::verse_id",
             "return book * 1_000_000 + chapter * 1_000 + verse", "return book * 1_000_000 + verse",
             "tests/test_multilingual.py::test_bible_pairs_share_one_id_per_verse_across_languages"),
    Mutation("sampler_default_alpha_of_its_own", "hf_xlsr/data/multilingual.py::LanguagePairSampler.__init__",
             "        alpha: float = LANGUAGE_SAMPLING_ALPHA,", "        alpha: float = 1.0,",
             "tests/test_multilingual.py::test_one_default_sampling_temperature_whatever_the_arguments"),
    Mutation("export_reads_one_training_source", "hf_xlsr/export.py::mteb_training_datasets",
             "    if not isinstance(train_data, str):",
             "    if False:",
             "tests/test_cli_and_arguments.py::test_a_run_on_per_pair_files_exports_with_its_training_datasets"),
    Mutation("statistics_of_an_empty_queue_logged", "hf_xlsr/trainers/trainer.py::XlsrTrainer.log",
             "if not math.isnan(value)",
             "if True", FIRST_LOG),
    Mutation("accuracy_without_negatives_counted", M + "functional.py::info_nce",
             "correct = correct.masked_fill(~negative.any(dim=1), math.nan)", "correct = correct", FIRST_LOG),
    Mutation("paper_warm_up_for_a_short_run", "hf_xlsr/trainers/trainer.py::XlsrTrainer.create_scheduler",
             'if "warmup_steps" in paper and warmup >= 1 and warmup > WARMUP_SHARE * num_training_steps:', "if False:",
             "tests/test_trainer.py::test_a_ten_step_run_warms_up_for_a_tenth_of_itself_not_the_papers_400_steps"),
    Mutation("output_dir_writability_not_checked", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "                check_writable(value, name)", "                pass",
             "tests/test_cli_errors.py::test_train_checks_its_output_folders_can_be_written_before_training"),
    Mutation("misspelt_override_not_named", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "        if name not in known:",
             "        if False:", "tests/test_cli_errors.py::test_a_misspelt_override_names_the_closest_field"),
    Mutation("evaluation_encodes_a_sentence_again", "hf_xlsr/evaluation/encoders.py::CachedEncoder.__call__",
             "new = list(dict.fromkeys(s for s in sentences if (language, s) not in self.vectors))",
             "new = list(dict.fromkeys(sentences))",
             "tests/test_evaluation.py::test_an_evaluation_encodes_each_sentence_of_each_language_once"),
    Mutation("push_works_before_asking_the_hub", "hf_xlsr/hub.py::check_hub_reachable",
             "        HfApi(token=token).whoami()",
             "        pass", "tests/test_cli_errors.py::test_push_without_a_token_or_a_network_says_so_in_one_line"),
    Mutation("untrained_language_not_marked", "hf_xlsr/commands/evaluate.py::run",
             'untrained = [language for language in args.languages if trained and language not in trained]',
             "untrained = []",
             "tests/test_evaluation.py::test_evaluate_marks_the_languages_never_trained_and_times_each_task"),
    Mutation("queue_slots_ignore_the_pointer", M + "queue.py::MemoryQueue.enqueue",
             "slots = (start + torch.arange(n - kept, n, device=self.keys.device)) % self.size",
             "slots = torch.arange(n - kept, n, device=self.keys.device) % self.size", QUEUE_PROPERTY),
    Mutation("rollback_leaves_the_keys", M + "queue.py::MemoryQueue.rollback",
             "self.keys[slots], self.ids[slots] = old_keys, old_ids", "self.ids[slots] = old_ids", QUEUE_PROPERTY),
    Mutation("ids_cross_the_gather_as_floats", M + "momentum.py::MomentumContrast.enqueue",
             "all_ids = torch.stack([rows[:, -3], rows[:, -2]], dim=1).view(torch.long).reshape(-1)",
             "all_ids = rows[:, -3].long()",
             "tests/test_properties.py::test_keys_and_64_bit_meaning_ids_cross_the_gather_packed_in_one_float32_row"),
    Mutation("given_meaning_ids_ignored", "hf_xlsr/data/multilingual.py::shared_meanings",
             'linked += [("id", namespace, own)] if own is not None and own >= 0 else []', "linked += []",
             "tests/test_properties.py::"
             "test_two_rows_share_a_meaning_id_exactly_when_a_chain_of_shared_sentences_or_ids_joins_them"),
    Mutation("progress_bars_left_on", "hf_xlsr_cli.py::quiet_console",
             '        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"\n',
             "        pass\n", LINE_BUDGET),
    Mutation("deepspeed_notice_kept", "hf_xlsr_cli.py::quiet_console",
             '    logging.getLogger("DeepSpeed").addFilter(', '    (lambda filter: None)(', LINE_BUDGET),
    Mutation("memory_pinned_without_a_gpu", "hf_xlsr/trainers/trainer.py::XlsrTrainingArguments.__post_init__",
             "            self.dataloader_pin_memory = False  #", "            pass  #", LINE_BUDGET),
    Mutation("run_languages_checked_only_when_read", "hf_xlsr/trainers/checks.py::check_languages_have_data",
             "        have = corpus_languages(source)", "        have = None",
             "tests/test_cli_errors.py::test_a_language_the_corpus_lacks_lists_the_corpus_languages"),
    Mutation("evaluate_languages_checked_only_when_read", "hf_xlsr/commands/evaluate.py::run",
             "    check_evaluation_languages(args.data, args.languages)", "    pass",
             "tests/test_cli_errors.py::test_evaluate_names_a_language_the_data_lacks_and_leaves_no_folder"),
    Mutation("wrong_type_prints_the_usage", "hf_xlsr/trainers/config_file.py::RunArgumentParser.error",
             "        raise ConfigFileError(message)",
             "        super().error(message)",
             "tests/test_cli_errors.py::test_a_wrong_type_in_the_file_names_the_file_and_field"),
    Mutation("encoder_reference_not_checked", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "        check_reference(reference, name, where)", "        pass",
             "tests/test_cli_errors.py::test_an_encoder_that_is_not_here"),
    Mutation("generated_tables_not_rewritten", "benchmarks/readme_tables.py::rewrite.fill",
             "return match.group(1) + tables[name] + match.group(4)", "return match.group(0)",
             "tests/benchmarks/test_readme_tables.py::test_a_typed_figure_in_a_generated_block_is_caught"),
    Mutation("own_meaning_in_batch", M + "functional.py::info_nce",
             "negative &= (query_ids[:, None] != key_ids[None, :]) | (query_ids[:, None] < 0)", "pass",
             "tests/test_st_loss.py::test_labels_are_meaning_ids_that_mask_translations_in_the_batch_and_the_queue"),
    # Many languages
    Mutation("third_language_translation_queued_as_negative", M + "functional.py::info_nce",
             "queue_logsumexp(q, queue, scale, query_ids, queue_ids)",
             "queue_logsumexp(q, queue, scale, None, queue_ids)", THIRD_LANGUAGE),
    Mutation("same_meaning_in_batch_negatives", M + "functional.py::other_rows_of_the_same_meaning",
             "same = (ids[:, None] == ids[None, :]) & (ids[:, None] >= 0)",
             "same = torch.zeros(n, n, dtype=torch.bool, device=device)", THIRD_LANGUAGE),
    Mutation("pairs_drawn_uniformly", "hf_xlsr/data/multilingual.py::sampling_weights",
             "weights = [n**alpha if n else 0.0 for n in sizes]", "weights = [1.0 for n in sizes]",
             "tests/test_multilingual.py::test_pairs_are_drawn_with_probability_proportional_to_size_to_the_alpha[1.0]"),
    Mutation("one_pair_batches_mixed", "hf_xlsr/data/multilingual.py::LanguagePairSampler.__init__",
             'self.block = batch_size if batches == "one_pair" else 1', "self.block = 1",
             "tests/test_multilingual.py::test_one_pair_batches_and_mixed_batches"),
    # The command line
    Mutation("output_dir_file_not_checked", "hf_xlsr/trainers/config_file.py::parse_run_arguments",
             "if value and Path(value).is_file():",
             "if False:",
             "tests/test_cli_errors.py::test_an_output_dir_that_is_a_file_is_refused_before_anything_loads"),
    Mutation("training_seed_draws_the_sample", "hf_xlsr/trainers/run.py::heldout_evaluators",
             '"seed": data_args.eval_seed',
             '"seed": 42', SAMPLE),
    Mutation("files_keep_private_modes", "hf_xlsr/utils.py::with_umask",
             "entry.chmod((0o777 if entry.is_dir() else 0o666) & ~umask)", "pass", SAMPLE),
    Mutation("mining_language_not_checked", "hf_xlsr/commands/mine.py::mining_languages",
             "        if language not in languages:",
             "        if False:",
             "tests/test_mining.py::test_mine_infers_the_two_routes_names_a_wrong_language_and_warns_about_one_file"),
    # mining
    Mutation("pairing_round_ignores_targets", "hf_xlsr/evaluation/mining/margin.py::greedy_one_to_one",
             "winners = left[first_of_source & first_of_target]", "winners = left[first_of_source]", PAIRING),
    Mutation("each_direction_trains_its_own_index", "hf_xlsr/evaluation/mining/margin.py::mine",
             "centres=centres) if approximate else None", "centres=centres) if False else None",
             "tests/test_mining.py::test_one_trained_index_serves_both_directions_and_factory_strings_are_indexes"),
    Mutation("mine_sides_not_centred", "hf_xlsr/evaluation/mining/margin.py::mine",
             "if centre and approximate else None", "if False else None", CENTRED),
    Mutation("queries_searched_uncentred", "hf_xlsr/evaluation/mining/search.py::knn",
             "prepared.search(centred(block.copy(), query_centre) if centres else block, asked)",
             "prepared.search(block, asked)", CENTRED),
    Mutation("candidates_keep_the_centred_cosine", "hf_xlsr/evaluation/mining/search.py::knn",
             "faiss.fvec_inner_products_by_idx(faiss.swig_ptr(found), faiss.swig_ptr(block), faiss.swig_ptr(stored), "
             "faiss.swig_ptr(where), block.shape[1], len(block), asked)", "pass", CENTRED),
    Mutation("candidate_cosine_unnormalised", "hf_xlsr/evaluation/mining/search.py::knn",
             "found *= inverse_norm[np.maximum(where, 0)]", "pass",
             "tests/test_mining.py::test_a_query_whose_scanned_lists_hold_too_few_vectors_is_searched_exactly"),
    Mutation("scan_padded_block_rows_out_of_order", "hf_xlsr/evaluation/mining/scan.py::scan_lists.products",
             "padded = np.resize(block, -(-len(block) // quarter) * quarter)",
             "padded = np.resize(block[::-1], -(-len(block) // quarter) * quarter)", SCAN),
    Mutation("mapped_vectors_not_centred", "hf_xlsr/evaluation/mining/scan.py::_as_scanned",
             "return _mapped(unit, transform) if transform else unit",
             "return _mapped(unit_float32(vectors), transform) if transform else unit",
             SCAN),
    Mutation("int8_queries_keep_the_corpus_scale", "hf_xlsr/evaluation/mining/scan.py::_int8_rows",
             "        scaled = block / scale\n", "        scaled = block.copy()\n", SCAN),
    Mutation("int8_corpus_scaled_vector_by_vector", "hf_xlsr/evaluation/mining/scan.py::_int8_rows",
             "        scaled = block * scale\n",
             "        scaled = block * 127 / np.abs(block).max(axis=1, keepdims=True)\n", SCAN),
    Mutation("device_chunks_indexed_from_zero", "hf_xlsr/evaluation/mining/device.py::device_knn",
             "            place += first\n",
             "", DEVICE + "test_every_vector_scored_in_chunks_finds_what_a_float64_search_finds"),
    Mutation("device_candidates_not_rescored", "hf_xlsr/evaluation/mining/device.py::device_knn",
             "block, stored[where])", "block, low[where].float())",
             DEVICE + "test_every_vector_scored_in_chunks_finds_what_a_float64_search_finds"),
    Mutation("a_job_leaves_the_corpus_off_the_device", "hf_xlsr/evaluation/mining/search.py::prepare",
             "    if device := _device_of(index, corpus):", "    if False:",
             DEVICE + "test_a_job_in_shards_on_the_device_moves_each_corpus_there_once_and_pairs_what_one_search_"
             "pairs"),
    Mutation("auto_ignores_the_device", "hf_xlsr/evaluation/mining/index.py::index_spec",
             'if index == "auto" and n >= IVF_THRESHOLD and search_device(n, dim):', "if False:",
             DEVICE + "test_auto_searches_every_vector_where_a_device_holds_the_corpus"),
    Mutation("gpu_grid_part_leaves_an_arm_out", "benchmarks/gpu_suite.py::main",
             "choices=list(ARMS), default=GRID_ARMS,", "choices=list(ARMS), default=GRID_ARMS[:2],",
             "tests/benchmarks/test_gpu_suite.py::test_the_gpu_suite_runs_every_part_in_a_dry_run"),
    Mutation("joined_parts_take_the_calls_command", "benchmarks/gpu_suite.py::join",
             'part = {"command": report.get("command"), "date": report["date"], **part}',
             'part = {**part, "command": report.get("command"), "date": report["date"]}',
             "tests/benchmarks/test_gpu_suite.py::test_reports_of_two_calls_join_into_one"),
    Mutation("every_query_scanned_at_once", "hf_xlsr/evaluation/mining/search.py::knn",
             "scan_size = block_size * max(1, SCAN_QUERIES // block_size)", "scan_size = len(queries)", SCAN),
    Mutation("kept_ties_broken_by_chance", "hf_xlsr/evaluation/mining/scan.py::_stable_sort",
             "torch.sort(torch.from_numpy(values), stable=True)",
             "torch.sort(torch.from_numpy(values), stable=False)",
             "tests/test_mining_job.py::test_shards_of_queries_give_the_pairs_of_one_search"),
    Mutation("corpus_added_uncentred", "hf_xlsr/evaluation/mining/search.py::build_index",
             "built.add(centred(unit_float32(corpus[start : start + block_size]), centre))",
             "built.add(unit_float32(corpus[start : start + block_size]))", CENTRED),
    Mutation("lists_trained_uncentred", "hf_xlsr/evaluation/mining/search.py::train_index",
             "            centred(part, centre)\n",
             "", CENTRED),
    Mutation("kit_without_transformers", "tools/gpu_kit.py",
             '"faiss-cpu", "transformers", "sentence-transformers",', '"faiss-cpu", "sentence-transformers",',
             "tests/test_gpu_kit.py::"
             "test_the_kit_installs_without_an_index_and_runs_the_dry_run_in_the_images_packages"),
    Mutation("framework_version_from_metadata", "hf_xlsr/trainers/run.py::framework_versions",
             '"hf_xlsr": __version__}',
             '"hf_xlsr": version("hf_xlsr")}',
             "tests/test_gpu_kit.py::"
             "test_the_kit_installs_without_an_index_and_runs_the_dry_run_in_the_images_packages"),
    Mutation("mining_gold_is_the_shuffle", "benchmarks/gpu_encoding.py::mining_sides",
             "gold[order] = np.arange(per_side)",
             "gold[:] = order",
             "tests/benchmarks/test_gpu_suite.py::test_mining_sides_are_distinct_sentences_whose_gold_pairs_are_translations"),
    Mutation("gpu_report_written_at_the_end_only", "benchmarks/gpu_suite.py::main",
             "        write(report, Path(args.out))  # after each part", "        pass  # after each part",
             "tests/benchmarks/test_gpu_suite.py::test_a_call_cut_short_keeps_the_parts_it_finished"),
    Mutation("mining_size_one_side", "benchmarks/gpu_encoding.py::mining_size", "(2 * 2 / rate + SEARCH_SECONDS)",
             "(2 / rate + SEARCH_SECONDS)",
             "tests/benchmarks/test_gpu_suite.py::test_the_mining_takes_as_many_sentences_as_the_parts_time_holds"),
    Mutation("timing_of_another_setup", "benchmarks/report/queue.py::timing_of",
             "if any(ours[key] != timed[\"setup\"][key] for key in keys):", "if False:",
             "tests/benchmarks/test_queue_vs_batch.py::test_a_results_file_is_reported_with_its_own_timing_only"),
    Mutation("named_timing_file_ignored", "benchmarks/report/queue.py::timing_of",
             'path = path or results_path.with_name(', 'path = results_path.with_name(',
             "tests/benchmarks/test_queue_vs_batch.py::test_a_results_file_is_reported_with_its_own_timing_only"),
    Mutation("step_cost_memory_against_the_peers_training", "benchmarks/report/cost.py::step_cost_table",
             "{row['held_mb'] / peer['held_mb']:.2f}", "{row['held_mb'] / peer['training_mb']:.2f}",
             "tests/benchmarks/test_queue_vs_batch.py::test_the_step_cost_table_sets_each_arm_against_mnrl_at_batch_b"),
    Mutation("weight_state_without_the_moments", "benchmarks/bench_queue_vs_batch.py::weight_state_mb",
             "for value in state.values() if torch.is_tensor(value))",
             "for value in state.values() if torch.is_tensor(value) and value.ndim == 0)",
             QUEUE_VS_BATCH + "test_the_weights_training_state_is_a_gradient_and_two_moments_per_weight"),
    Mutation("held_memory_read_after_the_build", "benchmarks/bench_queue_vs_batch.py::timing_child",
             "        reset_peak()\n        unbuilt = memory_mb(\"VmRSS\")\n        trainer, _ = build(arm, path, "
             "train, args.languages, steps, args.learning_rate, output_dir, 0, args.max_length,\n"
             "                           temperature=args.temperature)  # fmt: skip\n",
             "        trainer, _ = build(arm, path, train, args.languages, steps, args.learning_rate, output_dir, 0, "
             "args.max_length,\n                           temperature=args.temperature)  # fmt: skip\n"
             "        reset_peak()\n        unbuilt = memory_mb(\"VmRSS\")\n",
             QUEUE_VS_BATCH + "test_the_memory_a_queue_arm_holds_counts_its_momentum_copy"),
    Mutation("pairs_over_the_seeds_either_arm_ran", "benchmarks/compare.py::paired",
             "seeds = sorted(by_side[0].keys() & by_side[1].keys())",
             "seeds = sorted(by_side[0].keys() | by_side[1].keys())",
             "tests/benchmarks/test_readme_tables.py::"
             "test_two_arms_are_paired_on_the_seeds_both_ran_and_summarised_by_their_sample_spread"),
    Mutation("momentum_copy_copies_the_tokenizer", "hf_xlsr/modeling/ema.py::momentum_copy",
             "                shared[id(tokenizer)] = tokenizer", "                pass",
             "tests/test_st_loss.py::test_the_momentum_copy_owns_its_weights_and_shares_the_tokenizer"),
    Mutation("mining_measurement_paired_by_size_alone", "benchmarks/report/mining_scale.py::measurements",
             'grouped.setdefault((run["size"], run.get("seed", 0)), {})', 'grouped.setdefault((run["size"], 0), {})',
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_size_measured_again_shows_each_measurement_with_its_own_peer"),
    Mutation("tatoeba_mean_over_part_of_the_languages", "benchmarks/report/tatoeba.py::tatoeba_means",
             "if len(values) == len(codes or range(112)) else None", "if values else None",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_tatoeba_table_averages_each_model_over_the_languages_it_shares_with_each_column"),
    Mutation("verdict_of_118_languages_before_three_seeds", "benchmarks/report/languages.py::multilingual_118",
             '"complete": len(figures) >= len(SEEDS)', '"complete": len(figures) >= 1',
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_the_118_language_report_reads_the_bible_languages_at_the_picks_beside_the_start"),
    Mutation("picks_run_every_seed_whatever_seeds_says", "benchmarks/multilingual_grid.py::run_at_picks",
             "for seed in args.seeds:", "for seed in SEEDS:",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_a_run_at_another_grids_picks_takes_each_arms_pick_on_tune_and_runs_three_seeds"),
    Mutation("grid_figures_read_the_catalogue_languages", "benchmarks/report/languages.py::grid_figures",
             'languages = [code for code in record["setup"]["languages"] if code in LANGUAGES]',
             'languages = record["setup"]["languages"]',
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_the_118_language_report_reads_the_bible_languages_at_the_picks_beside_the_start"),
    Mutation("tatoeba_row_of_one_seed", "benchmarks/report/tatoeba.py::tatoeba_runs",
             'files = sorted(shared.RESULTS.glob(f"{stem}_seed*.json")) or',
             'files = sorted(shared.RESULTS.glob(f"{stem}_seed*.json"))[:1] or',
             "tests/benchmarks/test_readme_tables.py::"
             "test_a_trained_model_s_tatoeba_row_is_over_its_seeds_and_hf_xlsr_meets_mnrl_seed_by_seed"),
    Mutation("tatoeba_seeds_paired_by_position", "benchmarks/report/tatoeba.py::tatoeba_paired",
             "differences = [ours[seed][column] - theirs[seed][column] for seed in seeds]",
             "differences = [a[column] - b[column] for a, b in zip(ours.values(), theirs.values())]",
             "tests/benchmarks/test_readme_tables.py::"
             "test_a_trained_model_s_tatoeba_row_is_over_its_seeds_and_hf_xlsr_meets_mnrl_seed_by_seed"),
    Mutation("tatoeba_verdict_with_a_seed_behind", "benchmarks/report/index.py::tatoeba_verdict",
             "real = abs(gain) > max(spreads) and len({d > 0 for d in differences}) == 1",
             "real = abs(gain) > max(spreads)",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_tatoeba_verdict_needs_three_seeds_a_gap_beyond_both_spreads_and_every_seed_on_one_side"),
    Mutation("tatoeba_verdict_against_one_spread", "benchmarks/report/index.py::tatoeba_verdict",
             "real = abs(gain) > max(spreads)", "real = abs(gain) > spreads[0]",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_tatoeba_verdict_needs_three_seeds_a_gap_beyond_both_spreads_and_every_seed_on_one_side"),
    Mutation("tatoeba_verdict_from_two_seeds", "benchmarks/report/index.py::tatoeba_verdict",
             "    if len(seeds) < 3:\n        return question, measured, \"cannot show before 3 seeds of both\"",
             "    if len(seeds) < 2:\n        return question, measured, \"cannot show before 3 seeds of both\"",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_tatoeba_verdict_needs_three_seeds_a_gap_beyond_both_spreads_and_every_seed_on_one_side"),
    Mutation("tatoeba_prefix_dropped", "benchmarks/tatoeba.py::encoder_of",
             "plain([args.prefix + s for s in sentences], language)", "plain(list(sentences), language)",
             "tests/benchmarks/test_tatoeba_bench.py::"
             "test_use_m3_encodes_with_or_without_a_prefix_and_ranks_a_translation_first"),
    Mutation("results_added_without_the_lock", "benchmarks/common.py::Results.add",
             "fcntl.flock(lock, fcntl.LOCK_EX)", "pass",
             RESULTS_FILE + "test_processes_adding_runs_to_one_file_at_once_keep_every_run"),
    Mutation("done_reads_the_runs_of_its_opening", "benchmarks/common.py::Results.done",
             '            self.data["runs"] = json.loads(self.path.read_text())["runs"]\n        found',
             "            pass\n        found",
             RESULTS_FILE + "test_a_run_another_process_added_is_skipped_and_the_skip_is_said"),
    Mutation("linear_map_of_the_first_rows_only", "hf_xlsr/evaluation/mining/scan.py::_mapped",
             "= vectors[start : start + MAP_ROWS] @ matrix + bias", "= vectors[:MAP_ROWS] @ matrix + bias",
             "tests/test_mining.py::test_a_linear_map_applied_a_few_rows_at_a_time_maps_every_row_as_float64_does"),
    Mutation("timing_rounds_in_one_order", "benchmarks/bench_queue_vs_batch.py::timing",
             "for arm in arms if i % 2 == 0 else arms[::-1]:", "for arm in arms:",
             "tests/benchmarks/test_queue_vs_batch.py::test_timing_interleaves_the_arms_and_keeps_each_finished_round"),
    Mutation("timing_file_claims_every_round", "benchmarks/bench_queue_vs_batch.py::timing",
             '"rounds": i + 1,', '"rounds": args.timing_rounds,',
             "tests/benchmarks/test_queue_vs_batch.py::test_timing_interleaves_the_arms_and_keeps_each_finished_round"),
    Mutation("queue_floor_at_the_slowest_width", "benchmarks/bench_queue.py::one_configuration",
             'width = min(FLOOR_WIDTHS, key=lambda w: statistics.median(times[f"floor {w}"]))',
             'width = max(FLOOR_WIDTHS, key=lambda w: statistics.median(times[f"floor {w}"]))',
             "tests/benchmarks/test_bench_queue.py::"
             "test_the_floor_is_the_width_that_ran_fastest_over_the_repeats_and_every_ratio_is_against_it"),
    Mutation("queue_ratio_against_another_width", "benchmarks/bench_queue.py::one_configuration",
             'floor_times = times[f"floor {width}"]', 'floor_times = times["floor 8192"]',
             "tests/benchmarks/test_bench_queue.py::"
             "test_the_floor_is_the_width_that_ran_fastest_over_the_repeats_and_every_ratio_is_against_it"),
    Mutation("queue_bench_rows_ignore_their_block", "benchmarks/bench_queue.py::one_configuration",
             "functional.QUEUE_BLOCK_SIZE = block or functional.QUEUE_BLOCK_SIZE", "pass",
             "tests/benchmarks/test_bench_queue.py::test_a_blocked_row_scores_the_queue_in_its_own_blocks"),
    Mutation("queue_floor_one_direction", "benchmarks/bench_queue.py::floor_products", "pairs=round(2 * size / width)",
             "pairs=round(size / width)",
             "tests/benchmarks/test_bench_queue.py::test_the_floor_counts_both_products_of_both_directions"),
    Mutation("stored_products_of_one_queue_twice", "benchmarks/bench_queue.py::one_configuration",
             "[queue for _, _, queue in sides]", "[sides[0][2], sides[0][2]]",
             STORED + "test_the_stored_products_read_every_key_of_both_queues_once_in_the_rows_blocks"),
    Mutation("stored_products_at_another_width", "benchmarks/bench_queue.py::one_configuration",
             'stored_width = functional.QUEUE_BLOCK_SIZE if implementation == "blocked" else size',
             'stored_width = 1024 if implementation == "blocked" else size',
             STORED + "test_the_stored_products_read_every_key_of_both_queues_once_in_the_rows_blocks"),
    Mutation("stored_products_skip_the_remainder", "benchmarks/bench_queue.py::stored_products",
             "for start in range(0, len(queue), width):", "for start in range(0, len(queue) - width + 1, width):",
             STORED + "test_the_stored_products_read_every_key_of_both_queues_once_in_the_rows_blocks"),
    Mutation("third_ratio_against_the_floor", "benchmarks/bench_queue.py::one_configuration",
             'stored_ratios = [a / f for a, f in zip(added, times["stored"], strict=True)]',
             "stored_ratios = [a / f for a, f in zip(added, floor_times, strict=True)]",
             STORED + "test_the_third_ratio_is_the_added_time_over_the_stored_products_time"),
    Mutation("rule_rows_hide_their_products", "benchmarks/report/mining_scale.py::rule_table",
             "products\" if len(shown) > 1 else \"\"", "products\" if False else \"\"",
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_rule_table_of_two_product_dtypes_names_each_rows_dtype_and_sets_it_against_the_first"),
    Mutation("rule_probes_uncapped", "benchmarks/bench_mining_scale.py::rule_spec",
             'value = {"r": root, "p": min(root // 12, 64)}', 'value = {"r": root, "p": root // 12}',
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_rule_setting_fills_its_lists_and_probes_and_their_multiples"),
    Mutation("interleaved_rounds_in_one_order", "benchmarks/common.py::interleaved",
             "list(runs)[:: -1 if palindromic and round_ % 2 else 1]", "list(runs)",
             RESULTS_FILE + "test_arms_are_timed_in_turn_the_order_reversed_every_other_round"),
    Mutation("pooled_seeds_population_spread", "benchmarks/common.py::mean_and_spread",
             "statistics.stdev(values) if len", "statistics.pstdev(values) if len",
             "tests/benchmarks/test_readme_tables.py::"
             "test_two_arms_are_paired_on_the_seeds_both_ran_and_summarised_by_their_sample_spread"),
    Mutation("joined_report_keeps_a_later_skip", "benchmarks/gpu_suite.py::join",
             'if not part["status"].startswith("skipped") or name not in joined["parts"]:', "if True:",
             "tests/benchmarks/test_gpu_suite.py::test_reports_of_two_calls_join_into_one"),
    Mutation("bf16_loads_float32_weights", "hf_xlsr/evaluation/loading.py::load_for_evaluation",
             'dtype = torch.bfloat16 if backend == "bf16" else None', "dtype = None",
             "tests/test_backends.py::test_the_encode_command_loads_bfloat16_weights_for_bf16"),
    Mutation("short_ivf_answers_kept", "hf_xlsr/evaluation/mining/search.py::knn",
             "    if len(short):", "    if False:",
             "tests/test_mining.py::test_a_query_whose_scanned_lists_hold_too_few_vectors_is_searched_exactly"),
    Mutation("ivf_candidates_not_rescored", "hf_xlsr/evaluation/mining/search.py::knn",
             "asked = min(k_factor * k, len(corpus)) if approximate else k", "asked = k",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("scan_only_the_floor_list", "hf_xlsr/evaluation/mining/scan.py::scan_lists",
             "    probed[first < 0] = n_lists  # and", "    probed[:] = n_lists  # and", SCAN),
    Mutation("scan_candidates_worst_first", "hf_xlsr/evaluation/mining/scan.py::scan_lists.ranked",
             "        key -= kept_score[:size]", "        key += kept_score[:size]", SCAN),
    Mutation("ivf_probes_a_fixed_number", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "min(lists // IVF_PROBE_SHARE, IVF_MAX_PROBES)", "min(lists, 16)",
             "tests/test_mining.py::test_auto_probes_a_share_of_its_lists"),
    Mutation("scan_keeps_the_padding", "hf_xlsr/evaluation/mining/scan.py::scan_lists.products",
             ")[: len(block), : len(listed)]", ")[: len(block)]", SCAN),
    Mutation("scan_rows_chosen_by_their_first_score", "hf_xlsr/evaluation/mining/scan.py::scan_lists",
             "hit = np.flatnonzero(scored.amax(dim=1).numpy() > floor[rows])",
             "hit = np.flatnonzero(scored[:, 0].numpy() > floor[rows])", SCAN),
    Mutation("scan_hits_kept_for_the_first_rows", "hf_xlsr/evaluation/mining/scan.py::scan_lists",
             "keep(rows[hit[row]], ", "keep(rows[row], ", SCAN),
    Mutation("scan_list_read_one_row_late", "hf_xlsr/evaluation/mining/scan.py::scan_lists.products",
             "vectors = stored[bounds[list_id] : bounds[list_id] + width]",
             "vectors = stored[bounds[list_id] + 1 : bounds[list_id] + 1 + width]", SCAN),
    Mutation("list_layout_left_in_corpus_order", "hf_xlsr/evaluation/mining/scan.py::list_layout",
             "_rows(unit, members, out=stored[: len(unit)])", "stored[: len(unit)] = unit", SCAN),
    Mutation("search_again_against_the_whole_job", "benchmarks/report/mining.py::e2e_table",
             "searched = f\"{run['search_seconds']:.1f} | {run['search_seconds'] / peer['search_seconds']:.2f}\"",
             "searched = f\"{run['search_seconds']:.1f} | {run['search_seconds'] / peer['seconds']:.2f}\"",
             "tests/benchmarks/test_bench_mining_e2e.py::test_an_end_to_end_size_is_searched_again_and_its_rows_name_the_index"),
    Mutation("lead_read_against_a_lossier_peer", "benchmarks/report/encoding.py::fastest_peer",
             "and 100 * (base - row[\"retrieval_accuracy\"]) <= max(lost, 0) + TIE", "and True",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("no_tie_in_retrieval", "benchmarks/report/encoding.py::fastest_peer",
             "<= max(lost, 0) + TIE", "<= max(lost, 0)",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("a_gain_demands_a_better_peer", "benchmarks/report/encoding.py::fastest_peer",
             "<= max(lost, 0) + TIE", "<= lost + TIE",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("peer_vectors_read_before_its_answer", "benchmarks/bench_encoding.py::PeerProcess.encoder.encode",
             '            self.answer("done")', "            pass",
             "tests/benchmarks/test_bench_encoding.py::test_a_peer_process_answers_each_request_with_its_own_vectors"),
    Mutation("int8_calibrated_on_the_shortest", "hf_xlsr/evaluation/encoders.py::ModelEncoder._calibration",
             "order[np.linspace(0, len(order) - 1, min(CALIBRATION, len(order))).astype(int)]",
             "order[: min(CALIBRATION, len(order))]",
             "tests/test_backends.py::test_openvino_int8_is_calibrated_on_sentences_spread_over_the_lengths_of_the_first_call"),
    Mutation("openvino_int8_left_unquantised", "hf_xlsr/evaluation/backends.py::compile_graph",
             "return _openvino_runner(quantize_openvino(path, calibration or [example]))",
             "return _openvino_runner(str(path))",
             "tests/test_backends.py::test_each_backend_gives_the_float32_vectors_within_its_precision"),
    Mutation("shared_encoding_reads_one_side_twice", "benchmarks/bench_mining_e2e.py::encode_side",
             'SentenceFile(folder / f"{args.side}.txt")', 'SentenceFile(folder / "source.txt")', ONE_ENCODING),
    Mutation("shared_encoding_left_out_of_the_job", "benchmarks/bench_mining_e2e.py::mine_size",
             'run.update(seconds=encoded + run["search_seconds"]', 'run.update(seconds=run["search_seconds"]',
             ONE_ENCODING),
    Mutation("scan_probes_the_farthest_lists", "hf_xlsr/evaluation/mining/scan.py::_unit_matrix",
             ".topk(lists, dim=1).indices", ".topk(lists, dim=1, largest=False).indices", SCAN),
    Mutation("k_factor_ignored", "hf_xlsr/evaluation/mining/index.py::spec_parts",
             "            k_factor = int(value)", "            pass",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("k_factor_passed_to_faiss", "hf_xlsr/evaluation/mining/index.py::spec_parts",
             'if name.strip() != "k_factor":', "if True:",
             "tests/test_mining.py::test_one_trained_index_serves_both_directions_and_factory_strings_are_indexes"),
    Mutation("ivf_lists_ignore_the_corpus_size", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "lists = max(1, min(int(IVF_LISTS_PER_ROOT * math.sqrt(n)), n // 39))", "lists = 100",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("engines_in_one_order_every_round", "benchmarks/bench_mining_engines.py::measure",
             "for arm in ARMS[:: 1 if repeat % 2 == 0 else -1]:", "for arm in ARMS:",
             "tests/benchmarks/test_bench_mining_engines.py::"
             "test_every_engine_searches_the_same_lists_in_rounds_of_reversed_order"),
    Mutation("engines_verdict_against_a_lossier_faiss", "benchmarks/report/mining_scale.py::engines_table",
             'if recall[arm] >= recall["scanner"] - RECALL_TOLERANCE]', "]",
             "tests/benchmarks/test_bench_mining_engines.py::"
             "test_the_verdict_compares_the_scanner_with_faiss_at_equal_recall"),
    Mutation("grid_equal_time_read_whatever_the_time", "benchmarks/protocol.py::grid_table",
             "if time <= 1", "if True",
             "tests/benchmarks/test_protocol.py::test_the_verdict_reads_the_arms_done_and_says_the_rest_cannot_show_yet"),
    Mutation("pairing_loop_ignores_the_rounds", "hf_xlsr/evaluation/mining/margin.py::greedy_one_to_one",
             "if not used_source[s] and not used_target[t]:", "if True:", PAIRING),
    # the queue against large batches, many languages
    Mutation("many_language_queue_without_meaning_ids", "benchmarks/queue_arms.py::build",
             '        data = data.add_column("label", train["example_id"])', "        pass",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("many_language_batches_with_duplicates", "benchmarks/queue_arms.py::build",
             'extra["batch_sampler"] = BatchSamplers.NO_DUPLICATES', "pass",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("many_language_dmm_without_meaning_ids", "benchmarks/queue_arms.py::build",
             'kept = [*columns, "source_language", "target_language", "example_id"] if many else columns',
             "kept = columns",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("configuration_field_left_out_of_args",
             "hf_xlsr/modeling/configuration_dual_momentum.py::DualMomentumConfig",
             "        nli_hidden_size (`int`, *optional*", "        nli_hidden (`int`, *optional*",
             "tests/test_layout.py::test_every_configuration_field_is_documented_where_help_and_the_api_page_show_it"),
    Mutation("evaluation_length_not_the_runs", "hf_xlsr/trainers/run.py::run_training",
             "        training_args.eval_max_length = data_args.max_length",
             "        training_args.eval_max_length = 128",
             "tests/test_cli_and_arguments.py::test_the_run_its_export_and_evaluate_give_one_figure_for_one_model"),
    # embeddings in shards
    Mutation("shards_embedded_again_on_resume", "hf_xlsr/evaluation/mining/shards.py::embed_shards",
             "todo = [i for i in range(process_index, count, num_processes) if not shard_path(folder, i).is_file()]",
             "todo = list(range(process_index, count, num_processes))",
             SHARDS + "test_a_job_killed_in_the_middle_resumes_to_the_same_vectors"),
    Mutation("shards_not_split_over_processes", "hf_xlsr/evaluation/mining/shards.py::embed_shards",
             "todo = [i for i in range(process_index, count, num_processes) if not shard_path(folder, i).is_file()]",
             "todo = [i for i in range(count) if not shard_path(folder, i).is_file()]",
             SHARDS + "test_two_processes_share_the_shards_and_give_the_vectors_of_one"),
    Mutation("shards_of_another_job_mixed_in", "hf_xlsr/evaluation/mining/shards.py::open_folder",
             "        if differs is not None:", "        if False:",
             SHARDS + "test_a_folder_of_another_job_is_refused_in_one_line_before_the_model_loads"),
    Mutation("sentence_range_read_from_the_start", "hf_xlsr/data/bitext.py::SentenceFile.batches",
             "            handle.seek(self.offsets[begin] if begin < len(self) else 0)", "            pass",
             SHARDS + "test_a_range_of_sentences_reads_from_its_offset_and_skips_blank_lines"),
    Mutation("auto_scans_full_vectors", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "reduced = n >= IVF_THRESHOLD and dim > REDUCED_DIMENSIONS", "reduced = False",
             "tests/test_mining.py::test_auto_probes_a_share_of_its_lists"),
    Mutation("pca_of_a_few_vectors", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "reduced = n >= IVF_THRESHOLD and dim > REDUCED_DIMENSIONS", "reduced = dim > REDUCED_DIMENSIONS",
             "tests/test_mining.py::test_auto_probes_a_share_of_its_lists"),
    Mutation("int8_scale_of_the_last_block", "hf_xlsr/evaluation/mining/scan.py::_int8_scale",
             "np.maximum(largest, np.abs(sample).max(axis=0), out=largest)",
             "largest = np.abs(sample).max(axis=0)",
             "tests/test_mining.py::test_the_int8_scale_read_in_blocks_is_the_scale_of_the_whole_sample"),
    Mutation("auto_probes_a_twelfth", "hf_xlsr/evaluation/mining/index.py",
             "IVF_PROBE_SHARE = 4 ", "IVF_PROBE_SHARE = 12 ",
             "tests/test_mining.py::test_auto_probes_a_share_of_its_lists"),
    Mutation("auto_ignores_the_memory_it_is_given", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "        if memory is not None and dim and 4 * n * (REDUCED_DIMENSIONS if reduced else dim) > memory:",
             "        if False:",
             "tests/test_mining.py::test_auto_keeps_the_index_within_the_memory_it_is_given"),
    Mutation("memory_counts_the_vectors_not_their_map", "hf_xlsr/evaluation/mining/index.py::index_spec",
             "4 * n * (REDUCED_DIMENSIONS if reduced else dim) > memory", "4 * n * dim > memory",
             "tests/test_mining.py::test_auto_keeps_the_index_within_the_memory_it_is_given"),
    Mutation("mine_drops_the_memory", "hf_xlsr/evaluation/mining/margin.py::mine",
             "    spec = index_spec(n, index, source_embeddings.shape[1], memory)", "    spec = index_spec(n, index)",
             "tests/test_mining.py::test_eight_bit_lists_find_the_pairs_full_lists_find"),
    Mutation("mining_job_drops_the_memory", "hf_xlsr/evaluation/mining/job.py::mine_in_shards",
             "spec = index_spec(max(map(len, sides)), index, sides[0].shape[1], memory)",
             "spec = index_spec(max(map(len, sides)), index, sides[0].shape[1])",
             "tests/test_mining.py::test_mine_memory_takes_a_size_and_reaches_the_search"),
    Mutation("mining_job_searches_finished_shards_again", "hf_xlsr/evaluation/mining/job.py::mine_in_shards",
             "if not neighbours_path(folder, direction, i).is_file()", "if True",
             "tests/test_mining_job.py::test_a_search_stopped_in_the_middle_resumes_to_the_same_pairs"),
    Mutation("mining_job_fingerprint_of_the_shape_only", "hf_xlsr/evaluation/mining/job.py::fingerprint",
             "hashlib.sha1(str(vectors.shape).encode() + rows.tobytes())", "hashlib.sha1(str(vectors.shape).encode())",
             "tests/test_mining_job.py::test_a_folder_of_another_search_is_refused"),
    Mutation("memory_size_counts_the_wrong_unit", "hf_xlsr_cli.py::byte_size",
             'base = 1024 if (match.group(3) or "").lower() == "ib" else 1000', "base = 1024",
             "tests/test_mining.py::test_mine_memory_takes_a_size_and_reaches_the_search"),
    # GradCache inside DualMomentumModel
    Mutation("gradcache_replay_draws_new_dropout", "hf_xlsr/modeling/gradcache.py::cache_gradients.replay",
             "                with state, precision:", "                with precision:",
             GRADCACHE + "test_dropout_of_each_mini_batch_is_replayed_in_the_backward_pass"),
    Mutation("gradcache_replay_ignores_the_outer_gradient", "hf_xlsr/modeling/gradcache.py::cache_gradients.replay",
             "grad[begin:end].flatten().float()) * grad_output", "grad[begin:end].flatten().float())",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("gradcache_replay_in_float32_under_bf16", "hf_xlsr/modeling/gradcache.py::cache_gradients",
             "enabled=torch.is_autocast_enabled(device)", "enabled=False",
             GRADCACHE + "test_the_replay_runs_in_the_forwards_bf16_autocast"),
    Mutation("gradcache_ddp_drops_the_first_mini_batches", "hf_xlsr/modeling/gradcache.py::cache_gradients.replay",
             "surrogate = surrogate + sum(", "surrogate = surrogate + 0 * sum(",
             GRADCACHE + "test_two_ddp_processes_train_the_cached_model_as_the_uncached_one"),
    Mutation("gradcache_grads_of_the_first_side_only",
             "hf_xlsr/modeling/modeling_dual_momentum.py::DualMomentumModel._cached_forward",
             "cache_gradients(xy.loss + yx.loss, columns,", "cache_gradients(xy.loss + yx.loss, columns[:1],",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("gradcache_replay_binds_the_last_side",
             "hf_xlsr/modeling/modeling_dual_momentum.py::DualMomentumModel._cached_forward",
             "def embed(begin: int, end: int, side: str = side) -> torch.Tensor:",
             "def embed(begin: int, end: int) -> torch.Tensor:",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("repeated_pairs_meaning_ids_ignored", "benchmarks/queue_arms.py::build",
             'ids = "example_id" in train.column_names', "ids = many",
             QUEUE_VS_BATCH + "test_repeated_two_language_pairs_with_meaning_ids_train_as_the_gpu_comparison_trains"),
    Mutation("many_language_figure_counts_zero_shot_pairs", "benchmarks/queue_arms.py::accuracy",
             'return metrics.get("retrieval_trained_accuracy", metrics["retrieval_accuracy"])',
             'return metrics["retrieval_accuracy"]',
             QUEUE_VS_BATCH + "test_the_many_language_figure_is_the_mean_over_each_language_with_the_first"),
    # the GPU suite
    Mutation("out_of_memory_arm_loses_the_part", "benchmarks/gpu_steps.py::training_step",
             "                    except torch.OutOfMemoryError as error:\n                        row[\"error\"]",
             "                    except ZeroDivisionError as error:\n                        row[\"error\"]",
             GPU_OOM),
    Mutation("training_step_arms_timed_one_after_the_other", "benchmarks/gpu_steps.py::training_step",
             "times, _ = interleaved(steps_of, rounds * steps, sync=lambda: synchronize(device))",
             "times = {name: interleaved({name: step}, rounds * steps, sync=lambda: synchronize(device))[0][name] "
             "for name, step in steps_of.items()}",
             GPU_OOM),
    # encoding backends
    Mutation("int8_backend_not_quantised", "hf_xlsr/evaluation/backends.py::compile_graph",
             "            path = quantized\n",
             "            pass\n", BACKEND + "[onnx-int8]"),
    Mutation("int8_quantises_the_narrowing_products", "hf_xlsr/evaluation/backends.py::quantize_int8",
             "nodes_to_exclude=narrowing_products(path)", "nodes_to_exclude=[]", BACKEND + "[onnx-int8]"),
    Mutation("int8_keeps_no_product_in_float32", "hf_xlsr/evaluation/backends.py::narrowing_products",
             "if shape is not None and len(shape) == 2 and shape[0] > shape[1]:", "if False:",
             "tests/test_backends.py::test_int8_keeps_the_products_that_narrow_the_width_in_float32"),
    Mutation("bf16_backend_in_float32", "hf_xlsr/evaluation/backends.py::compile_graph",
             'bfloat16=backend == "bf16" or auto', "bfloat16=auto", BACKEND + "[bf16]"),
    # inputs cut to the position table
    Mutation("encoder_cut_ignores_positions", "hf_xlsr/evaluation/encoders.py::ModelEncoder._tokenize",
             "max_length = min(self.max_length, model.max_tokens(language) or self.max_length)",
             "max_length = self.max_length", POSITIONS),
    Mutation("positions_without_padding_offset", M + "common.py::SentenceEncoderMixin.max_tokens",
             "(0 if table.padding_idx is None else table.padding_idx + 1)", "0", POSITIONS),
    Mutation("export_cut_ignores_positions", "hf_xlsr/export.py::export_sentence_transformers",
             "length = min(length, model.max_tokens(language) or length)", "length = length", POSITIONS),
    Mutation("every_language_on_the_first_encoder", M + "common.py::SentenceEncoderMixin.encoder_side",
             'return "xy"[languages.index(language)]', 'return "x"', OLD_CHECKPOINT),
    Mutation("old_tokenizer_folders_swapped", "hf_xlsr/tokenization.py::load_tokenizers",
             "zip(languages, LEGACY_FOLDERS,", "zip(languages, LEGACY_FOLDERS[::-1],", OLD_CHECKPOINT),
    Mutation("target_tokenized_as_the_source", "hf_xlsr/trainers/collators.py::BitextCollator.__call__",
             'zip(("source", "target"), (source, target),', 'zip(("source", "target"), (source, source),',
             "tests/test_languages_as_keys.py::test_the_collator_tokenizes_each_language_with_its_own_tokenizer"),
    Mutation("one_tokenizer_kept_as_a_mapping", "hf_xlsr/tokenization.py::one_or_per_language",
             "if len(distinct) == 1 else LanguageTokenizers", "if False else LanguageTokenizers",
             KEYS + "test_a_shared_encoder_needs_no_language_and_a_mapping_of_one_tokenizer_is_one_tokenizer"),
    Mutation("old_encoders_keyed_the_wrong_way", "hf_xlsr/trainers/legacy.py::translate_legacy_references",
             "{languages[0]: first or second, languages[1]: second}", "{languages[0]: second, languages[1]: first}",
             KEYS + "test_a_run_configuration_written_for_0_2_0_parses_with_a_warning_naming_the_new_fields"),
    Mutation("export_routes_with_the_first_languages_tokenizer", "hf_xlsr/export.py::export_sentence_transformers",
             "tokenizer_for(tokenizers, language).save_pretrained(folder)",
             "tokenizer_for(tokenizers, model.config.languages[0]).save_pretrained(folder)",
             "tests/test_languages_as_keys.py::test_a_checkpoint_written_by_0_2_0_exports_and_names_its_start"),
    Mutation("stacked_rows_name_the_languages_the_wrong_way", "hf_xlsr/data/multilingual.py::stack_pairs",
             'add_column("source_language", [first] * n).add_column("target_language", [second] * n)',
             'add_column("source_language", [second] * n).add_column("target_language", [first] * n)',
             "tests/test_multilingual.py::test_bible_pairs_share_one_id_per_verse_across_languages"),
    Mutation("zero_shot_pairs_counted_as_trained", "hf_xlsr/evaluation/retrieval.py::RetrievalEvaluator.evaluate",
             "(trained if (a, b) in self.trained else zero_shot)",
             "(zero_shot if (a, b) in self.trained else trained)",
             EVALUATE_MANY),
    Mutation("mean_over_the_trained_pairs_only", "hf_xlsr/evaluation/retrieval.py::RetrievalEvaluator.evaluate",
             'metrics["accuracy"] = float(np.mean(trained + zero_shot))',
             'metrics["accuracy"] = float(np.mean(trained or zero_shot))', EVALUATE_MANY),
    # the first hour: a plain clone, the command line, the run's defaults
    Mutation("final_checkpoint_kept", "hf_xlsr/trainers/callbacks.py::RunLengthCallback.on_step_end",
             "            control.should_save = False",
             "            control.should_save = control.should_save",
             FIRST_HOUR + "test_a_checkpoint_is_written_where_asked_and_not_again_at_the_last_step"),
    Mutation("logging_not_sized_to_the_run", "hf_xlsr/trainers/callbacks.py::RunLengthCallback.on_train_begin",
             "state.logging_steps = max(1, min(self.cap, state.max_steps // 10))",
             "state.logging_steps = self.cap",
             FIRST_HOUR + "test_a_checkpoint_is_written_where_asked_and_not_again_at_the_last_step"),
    Mutation("tatoeba_languages_ignored", "hf_xlsr/evaluation/suite.py::build_task",
             "languages=options.tatoeba_languages, routes=options.routes",
             "languages=None, routes=options.routes",
             "tests/test_tatoeba.py::test_evaluate_on_the_command_line_writes_each_languages_f1"),
    Mutation("tatoeba_bars_per_batch", "hf_xlsr/evaluation/encoders.py::without_progress",
             "            part.show_progress = False",
             "            part.show_progress = part.show_progress",
             "tests/test_tatoeba.py::test_the_evaluator_takes_either_code_of_a_language_and_encodes_under_one_bar"),
    Mutation("training_file_known_by_its_name", "hf_xlsr/commands/evaluate.py::warn_training_data",
             'file_digest(data) in (run.get("train_files") or {}).values()',
             'str(data) in (run.get("train_files") or {})',
             FIRST_HOUR + "test_evaluating_on_the_training_file_warns_wherever_the_file_lies"),
    Mutation("yaml_inputs_read_from_the_current_folder", "hf_xlsr/trainers/checks.py::inputs_beside_the_file.resolved",
             "        beside = path.parent / value",
             "        beside = Path(value)",
             FIRST_HOUR + "test_a_path_missing_beside_the_configuration_names_the_field_and_the_file"),
    Mutation("training_numbers_unchecked", "hf_xlsr/trainers/checks.py::check_bounds",
             "if isinstance(value, (int, float)) and not isinstance(value, bool) and value < least:",
             "if isinstance(value, (int, float)) and not isinstance(value, bool) and value < least - 10**9:",
             FIRST_HOUR + "test_a_training_number_out_of_range_is_one_line_and_no_output_folder"),
    Mutation("untrained_language_silent", "hf_xlsr/commands/common.py::warn_untrained",
             "        if language and trained and language not in trained:",
             "        if language and trained and language not in trained and not language:",
             FIRST_HOUR + "test_a_shared_encoder_told_an_untrained_language_warns_with_its_languages"),
    Mutation("dropped_duplicates_logged_by_every_reader", "hf_xlsr/data/bitext.py::unique_pairs",
             "        seen_before = (dataset._fingerprint, tuple(columns)) in _REPORTED_DROPS",
             "        seen_before = False",
             FIRST_HOUR + "test_the_same_rows_log_their_dropped_duplicates_once"),
    # a run that survives
    Mutation("incomplete_checkpoint_resumed", "hf_xlsr/trainers/checkpoints.py::last_whole_checkpoint",
             "        if not missing:\n            return str(folder)",
             "        if True:\n            return str(folder)",
             FAULTS + "test_a_checkpoint_left_incomplete_is_skipped_with_one_line"),
    Mutation("stop_signal_ignored", "hf_xlsr/trainers/callbacks.py::PreemptionCallback.handle",
             "        self.received = max(self.received, number)", "        self.received = 0",
             FAULTS + "test_a_stop_signal_saves_exits_0_and_the_resumed_run_ends_as_one_never_stopped[SIGTERM]"),
    Mutation("processes_stop_each_on_its_own_signal", "hf_xlsr/trainers/callbacks.py::PreemptionCallback.on_step_end",
             "            torch.distributed.all_reduce(agreed, op=torch.distributed.ReduceOp.MAX)",
             "            pass",
             FAULTS + "test_sigterm_to_one_process_under_accelerate_launch_stops_both_at_one_step_and_"
             "resumes_exactly"),
    Mutation("a_stopped_run_writes_a_final_model", "hf_xlsr/trainers/run.py::run_training",
             "        return trainer, {}\n    if getattr(model.config, \"pcr_components\", 0):",
             "    if getattr(model.config, \"pcr_components\", 0):",
             FAULTS + "test_a_stop_signal_saves_exits_0_and_the_resumed_run_ends_as_one_never_stopped[SIGTERM]"),
    Mutation("ctrl_c_not_caught", "hf_xlsr/trainers/callbacks.py::PreemptionCallback",
             "SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)", "SIGNALS = (signal.SIGTERM, signal.SIGUSR1)",
             FAULTS + "test_a_stop_signal_saves_exits_0_and_the_resumed_run_ends_as_one_never_stopped[SIGINT]"),
    Mutation("a_second_ctrl_c_waits_for_the_checkpoint", "hf_xlsr/trainers/callbacks.py::PreemptionCallback.handle",
             "                raise KeyboardInterrupt", "                pass",
             FAULTS + "test_a_second_ctrl_c_stops_at_once_without_a_checkpoint"),
    Mutation("forwarded_ctrl_c_stops_at_once", "hf_xlsr/trainers/callbacks.py::PreemptionCallback.handle",
             "now - self.interrupted_at >= self.REPEAT_SECONDS", "now - self.interrupted_at >= 0",
             FAULTS + "test_one_ctrl_c_that_reaches_the_process_twice_through_a_wrapper_still_saves"),
    Mutation("export_replaces_a_folder_of_other_files", "hf_xlsr/export.py::check_export_target",
             "    if EXPORT_MARKER not in entries or foreign:", "    if False:", EXPORT_TARGET),
    Mutation("export_over_its_own_model", "hf_xlsr/export.py::check_export_target",
             "        if folder == source or folder in source.parents:", "        if False:", EXPORT_TARGET),
    Mutation("export_replaces_an_earlier_export_unasked", "hf_xlsr/export.py::check_export_target",
             "    if not overwrite:", "    if False:", EXPORT_TARGET),
    Mutation("train_export_dir_unchecked", "hf_xlsr/trainers/config_file.py::check_outputs",
             "        if data_args.export_dir:", "        if False:",
             LOST + "test_train_refuses_an_export_dir_that_is_or_holds_its_run_before_training[output_dir]"),
    Mutation("a_second_run_mixes_with_the_first", "hf_xlsr/trainers/run_folder.py::check_new_run",
             "    if found and not resume and not overwrite:", "    if False:", SECOND_RUN),
    Mutation("resume_takes_another_runs_checkpoint", "hf_xlsr/trainers/run_folder.py::check_same_run",
             "    if differing:", "    if False:", SECOND_RUN),
    Mutation("overwrite_keeps_the_old_checkpoints", "hf_xlsr/trainers/run_folder.py::start_run",
             "                shutil.rmtree(folder / name)", "                pass", SECOND_RUN),
    Mutation("checkpoint_past_max_steps_taken", "hf_xlsr/trainers/checkpoints.py::check_checkpoint",
             "    if max_steps > 0 and step >= max_steps:", "    if False:", SECOND_RUN),
    Mutation("encode_drops_blank_lines", "hf_xlsr/data/bitext.py::SentenceFile.__init__",
             "            if text.strip() or keep_blank:", "            if text.strip():", ROW_PER_LINE),
    Mutation("cut_lines_uncounted", "hf_xlsr/evaluation/encoders.py::truncated_count",
             "cut = sum(length > limit for length in lengths)", "cut = sum(length > 10 * limit for length in lengths)",
             ROW_PER_LINE),
    Mutation("sentence_transformers_arm_draws_its_own_pairs", "benchmarks/multilingual_grid.py::drawn_pairs",
             'if getattr(args, "sampler", "shuffle") == "shuffle":', "if True:",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_with_one_sampler_the_sentence_transformers_arm_trains_on_the_rows_hf_xlsrs_trainer_draws"),
    Mutation("first_table_verdict_against_the_weaker_peer", "benchmarks/report/index.py::peers_of",
             "return [rows[peer] for peer in ARMS if peer not in HF_XLSR]",
             'return [rows["mnrl"]]',
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_the_first_table_reads_each_arms_seeds_tatoeba_and_cost_and_gives_its_verdict_against_the_strongest_peer"),
    Mutation("cmlm_bitext_temperature_ignored", "hf_xlsr/modeling/functional.py::additive_margin_retrieval_loss",
             "        scores = scores / temperature", "        pass",
             "tests/test_cmlm.py::test_additive_margin_loss_matches_float64_reference"),
    Mutation("cmlm_model_drops_its_bitext_temperature", "hf_xlsr/modeling/modeling_cmlm.py::CmlmModel.forward",
             "additive_margin_retrieval_loss(u, v, self.config.br_margin, example_ids, self.config.br_temperature)",
             "additive_margin_retrieval_loss(u, v, self.config.br_margin, example_ids)",
             "tests/test_cmlm.py::test_the_bitext_loss_of_a_cmlm_model_takes_its_configured_temperature"),
    Mutation("lightweight_alignment_temperature_ignored", "hf_xlsr/modeling/functional.py::in_batch_alignment_loss",
             "additive_margin_retrieval_loss(u, v, 0.0, ids, temperature)",
             "additive_margin_retrieval_loss(u, v, 0.0, ids)",
             "tests/test_lightweight.py::test_alignment_and_similarity_losses_match_float64_references"),
    Mutation("lightweight_model_drops_its_alignment_temperature",
             "hf_xlsr/modeling/modeling_lightweight.py::LightweightDualTransformer.forward",
             "in_batch_alignment_loss(u, v, example_ids, config.align_temperature)",
             "in_batch_alignment_loss(u, v, example_ids)",
             "tests/test_lightweight.py::test_the_alignment_loss_of_the_model_takes_its_configured_temperature"),
    Mutation("run_vocabulary_counts_the_pivot_per_pair", "hf_xlsr/trainers/builders.py::shared_tokenizer",
             "train_unigram_tokenizer(dict.fromkeys(texts), vocab_size)", "train_unigram_tokenizer(texts, vocab_size)",
             "tests/test_lightweight.py::test_the_runs_vocabulary_learns_each_sentence_once"),
    Mutation("scratch_arm_runs_the_pretrained_rates", "benchmarks/protocol.py::next_jobs",
             "for rate in grid.learning_rates", "for rate in LEARNING_RATES",
             "tests/benchmarks/test_protocol.py::test_an_arm_trained_from_scratch_runs_its_own_rates_and_the_table_shows_them"),
    Mutation("scratch_arm_extends_beyond_the_pretrained_rates", "benchmarks/protocol.py::next_jobs",
             "best_rate, grid.learning_rates)", "best_rate)",
             "tests/benchmarks/test_protocol.py::test_an_arm_trained_from_scratch_runs_its_own_rates_and_the_table_shows_them"),
    Mutation("lightweight_arm_drops_the_grids_temperature", "benchmarks/multilingual_grid.py::model_config",
             'return {"align_temperature": args.temperature}', "return {}",
             "tests/benchmarks/test_multilingual_grid.py::test_the_arms_from_scratch_train_one_untrained_architecture_over_one_vocabulary"),
    Mutation("scratch_mnrl_arm_starts_from_e5", "benchmarks/multilingual_grid.py::sentence_model",
             "    if arm in scratch_arms.ARMS:", "    if False:",
             "tests/benchmarks/test_multilingual_grid.py::test_the_arms_from_scratch_train_one_untrained_architecture_over_one_vocabulary"),
    Mutation("scratch_arms_mixed_with_e5_arms", "benchmarks/multilingual_grid.py::main",
             "    if 0 < len(set(args.grid) & set(scratch_arms.ARMS)) < len(args.grid):", "    if False:",
             "tests/benchmarks/test_multilingual_grid.py::test_the_arms_from_scratch_train_one_untrained_architecture_over_one_vocabulary"),
    Mutation("lightweight_faces_the_peers_from_e5", "benchmarks/report/index.py::peers_of",
             "    if arm in scratch_arms.ARMS:", "    if False:",
             "tests/benchmarks/test_multilingual_grid.py::test_the_first_table_reads_each_arms_seeds_tatoeba_and_cost_and_gives_its_verdict_against_the_strongest_peer"),
    Mutation("model_page_shows_another_arms_row", "benchmarks/report/index.py::model_row",
             'f"| {name}, this project\'s run | " + " | ".join(cells[arm])',
             'f"| {name}, this project\'s run | " + " | ".join(cells["mnrl"])',
             "tests/benchmarks/test_multilingual_grid.py::test_the_first_table_reads_each_arms_seeds_tatoeba_and_cost_and_gives_its_verdict_against_the_strongest_peer"),
    Mutation("en_fr_queue_arm_ignores_its_jobs_size", "benchmarks/queue_arms.py::build",
             'queue_size = queue_size or base * s.get("queue", 0)', 'queue_size = base * s.get("queue", 0)',
             "tests/benchmarks/test_queue_vs_batch.py::test_the_queue_arms_take_their_k_and_momentum_step_on_tune_and_each_job_trains_at_its_point"),
    Mutation("en_fr_job_drops_its_queue", "benchmarks/bench_queue_vs_batch.py::run_jobs",
             "if len(point) == 4 else {}", "if False else {}",
             "tests/benchmarks/test_queue_vs_batch.py::test_the_queue_arms_take_their_k_and_momentum_step_on_tune_and_each_job_trains_at_its_point"),
    Mutation("en_fr_queue_step_one_size", "benchmarks/queue_arms.py::queue_grid",
             "queue_sizes=(size // 4, size, size * 4)", "queue_sizes=(size,)",
             "tests/benchmarks/test_queue_vs_batch.py::test_the_queue_arms_take_their_k_and_momentum_step_on_tune_and_each_job_trains_at_its_point"),
    Mutation("en_fr_grid_without_the_queue_step", "benchmarks/bench_queue_vs_batch.py::main",
             "lambda job: run_jobs(args, results, [job]), grids)", "lambda job: run_jobs(args, results, [job]), {})",
             "tests/benchmarks/test_queue_vs_batch.py::test_the_queue_arms_take_their_k_and_momentum_step_on_tune_and_each_job_trains_at_its_point"),
    Mutation("gpu_118_trains_at_a_fixed_rate", "benchmarks/gpu_languages.py::languages_118",
             "languages=languages, learning_rate=rate,", "languages=languages, learning_rate=1e-4,",
             "tests/benchmarks/test_gpu_suite.py::test_the_118_language_part_trains_at_the_grids_pick_on_its_corpus_draw_and_scores_tatoeba"),
    Mutation("gpu_corpus_draw_passes_its_limit", "benchmarks/gpu_languages.py::draw_corpus",
             "        if size + len(line.encode(\"utf-8\")) > max_bytes:\n            continue\n", "",
             "tests/benchmarks/test_gpu_suite.py::test_the_118_language_part_trains_at_the_grids_pick_on_its_corpus_draw_and_scores_tatoeba"),
    Mutation("exact_search_by_distance", "hf_xlsr/evaluation/mining/search.py::exact_knn",
             "metric_type=faiss.METRIC_INNER_PRODUCT", "metric_type=faiss.METRIC_L2",
             "tests/test_mining.py::test_exact_search_in_blocks_is_the_float64_cosine_ranking_and_marks_missing_neighbours"),
    Mutation("gpu_languages_grid_without_the_arms_grids", "benchmarks/gpu_languages.py::languages_grid",
             "run_grid(results.runs, arms, run, grid.GRIDS)", "run_grid(results.runs, arms, run)",
             "tests/benchmarks/test_gpu_suite.py::test_the_languages_grid_part_runs_an_arms_protocol_and_goes_on_where_it_stopped"),
    Mutation("gpu_languages_grid_never_tests_the_pick", "benchmarks/gpu_languages.py::languages_grid",
             "        grid.test_the_pick(results, arm, rows[\"bible\"])", "        pass",
             "tests/benchmarks/test_gpu_suite.py::test_the_languages_grid_part_runs_an_arms_protocol_and_goes_on_where_it_stopped"),
    Mutation("mining_report_imports_its_measuring_script", "benchmarks/report/mining_scale.py",
             "from mining_arms import ARMS, ENGINES, REAL, SPEEDUP_GOAL  # noqa: E402",
             "from bench_mining_scale import ARMS, REAL  # noqa: E402\n"
             "from mining_arms import ENGINES, SPEEDUP_GOAL  # noqa: E402",
             "tests/test_layout.py::test_no_import_circle_between_the_benchmarks_scripts_and_their_report"),
    Mutation("gpu_corpus_draw_overwrites", "benchmarks/gpu_languages.py::draw_corpus",
             "    if Path(out).exists():", "    if False:",
             "tests/benchmarks/test_gpu_suite.py::test_the_118_language_part_trains_at_the_grids_pick_on_its_corpus_draw_and_scores_tatoeba"),
    Mutation("queue_step_skipped", "benchmarks/protocol.py::next_jobs",
             "        if sizes:\n            return sizes", "        pass",
             "tests/benchmarks/test_protocol.py::"
             "test_an_arm_with_a_queue_steps_through_its_sizes_then_its_momenta_at_the_best_rate_and_temperature"),
    Mutation("checkpoint_shapes_unchecked", "hf_xlsr/trainers/checkpoints.py::check_checkpoint",
             "        if name in shapes and shapes[name] != tuple(tensor.shape):",
             "        if name in shapes and False:",
             FAULTS + "test_a_broken_checkpoint_is_one_line_naming_the_file_before_anything_trains[queue]"),
    # software catalogues as bitext
    Mutation("catalogue_keeps_untranslated_messages", "hf_xlsr/data/catalogues.py::read_catalogues",
             "or not target or target == source or", "or not target or",
             CATALOGUES + "test_an_i18n_folder_is_aligned_by_key_and_filtered"),
    Mutation("catalogue_plural_switch_left_raw", "hf_xlsr/data/catalogues.py::clean_message",
             '    text = SWITCH.sub(r"\\1", text)', "    text = text",
             CATALOGUES + "test_an_i18n_folder_is_aligned_by_key_and_filtered"),
    Mutation("po_fuzzy_translation_kept", "hf_xlsr/data/catalogues.py::entries",
             'and "fuzzy" not in entry.flags and', "and",
             CATALOGUES + "test_a_po_catalogue_keeps_contexts_apart_and_leaves_fuzzy_and_empty_out"),
    Mutation("po_context_merged_into_its_msgid", "hf_xlsr/data/catalogues.py::entries",
             "found[entry.msgid if entry.msgctxt is None else", "found[entry.msgid if True else",
             CATALOGUES + "test_a_po_catalogue_keeps_contexts_apart_and_leaves_fuzzy_and_empty_out"),
    Mutation("po_error_without_its_line", "hf_xlsr/data/catalogues.py::read_po",
             'raise BitextFormatError(f"{path}:{number.group(1)}: not a line',
             'raise BitextFormatError(f"{path}: not a line',
             CATALOGUES + "test_a_malformed_catalogue_is_one_line_naming_the_file_and_line"),
    Mutation("catalogue_trains_on_test_lines", "hf_xlsr/data/catalogues.py::read_catalogues",
             "target == source or source in excluded or target in excluded", "target == source",
             CATALOGUES + "test_a_pair_whose_side_is_a_test_line_is_dropped"),
    Mutation("grid_pick_takes_the_worst_tune_score", "benchmarks/protocol.py::pick",
             '    return max(points, key=lambda run: run["tune"], default=None)',
             '    return min(points, key=lambda run: run["tune"], default=None)',
             "tests/benchmarks/test_protocol.py::test_the_pick_reads_tune_alone_at_the_pick_seed"),
    Mutation("grid_skips_the_temperature_stage", "benchmarks/protocol.py::next_jobs",
             "    if temperatures:\n        return temperatures",
             "    if False:\n        return temperatures",
             "tests/benchmarks/test_protocol.py::test_every_arm_goes_rates_then_temperatures_then_seeds"),
    Mutation("gradcache_undeclared", M + "common.py::TrainingDeclarations.uses_gradcache",
             "return self.mini_batch_size is not None", "return False",
             GRADCACHE + "test_the_trainer_runs_a_cached_model_under_ddp_without_the_search_for_unused_parameters"),
    Mutation("list_of_sources_keeps_the_first", "hf_xlsr/data/multilingual.py::_joined_sources",
             "datasets.concatenate_datasets([joined[name], part]) if name in joined else part",
             "joined.get(name, part)",
             CATALOGUES + "test_a_list_of_sources_joins_each_pairs_verses_and_interface_strings"),
    Mutation("list_of_sources_skips_the_bible", "hf_xlsr/data/multilingual.py::_joined_sources",
             "held = [pair for pair in pairs if all(code in have for code in pair)]", "held = []",
             CATALOGUES + "test_hf_xlsr_train_takes_a_list_of_sources_and_says_where_each_language_came_from"),
    Mutation("grid_tests_another_points_model", "benchmarks/multilingual_grid.py::test_the_pick",
             "and point(run) == point(chosen)", "and True",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_only_the_picks_model_is_scored_on_test_and_the_chooser_never_reads_it"),
    Mutation("chooser_handed_test_records", "benchmarks/protocol.py::tune_view",
             'if "tune" in run]', "]",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_only_the_picks_model_is_scored_on_test_and_the_chooser_never_reads_it"),
    Mutation("card_of_a_list_of_sources", "hf_xlsr/hub.py::render_model_card",
             "set(source_list(train_data))", "set([train_data])",
             CATALOGUES + "test_hf_xlsr_train_takes_a_list_of_sources_and_says_where_each_language_came_from"),
    Mutation("mteb_meta_of_a_list_of_sources", "hf_xlsr/export.py::mteb_training_datasets",
             "if not isinstance(train_data, str):", "if isinstance(train_data, dict):",
             CATALOGUES + "test_hf_xlsr_train_takes_a_list_of_sources_and_says_where_each_language_came_from"),
    Mutation("a_pairs_list_of_sources_unread", "hf_xlsr/data/multilingual.py::load_pair_datasets",
             "elif isinstance(entry, (list, tuple)):", "elif False:",
             CATALOGUES + "test_a_list_of_sources_joins_each_pairs_verses_and_interface_strings"),
    Mutation("grid_mnrl_starts_again_after_a_kill", "benchmarks/multilingual_grid.py::train_sentence_transformers",
             "trainer.train(resume_from_checkpoint=last_checkpoint(output_dir))", "trainer.train()",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_a_run_killed_after_a_checkpoint_goes_on_from_it_to_the_weights_of_a_run_never_killed[mnrl]"),
    Mutation("grid_hf_xlsr_starts_again_after_a_kill", "benchmarks/multilingual_grid.py::train_hf_xlsr",
             'config["resume_from_checkpoint"] = "latest"', "pass",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_a_run_killed_after_a_checkpoint_goes_on_from_it_to_the_weights_of_a_run_never_killed[hf_xlsr]"),
    Mutation("tatoeba_trained_reads_the_bibles_codes_only", "hf_xlsr/evaluation/tatoeba.py::TatoebaEvaluator.__init__",
             "ALL_TATOEBA_CODES.get(c) in self.sets", "TATOEBA_CODES.get(c) in self.sets",
             "tests/test_tatoeba.py::test_the_score_is_the_weighted_f1_of_the_nearest_english_sentence"),
    Mutation("tatoeba_trained_sets_not_read", "benchmarks/report/tatoeba.py::trained_sets",
             'record.get("trained_sets", TATOEBA_CODES.values())', "TATOEBA_CODES.values()",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_per_language_tatoeba_table_marks_what_each_model_trained_on_and_names_those_below_the_start"),
    Mutation("tatoeba_language_of_one_seed", "benchmarks/report/tatoeba.py::tatoeba_languages",
             "for _, scores in runs.values())", "for _, scores in list(runs.values())[:1])",
             "tests/benchmarks/test_readme_tables.py::"
             "test_the_per_language_tatoeba_table_marks_what_each_model_trained_on_and_names_those_below_the_start"),
    Mutation("gpu_grid_one_rate_for_every_point", "benchmarks/gpu_grid.py::queue_grid",
             "pairs // batch, float(rate),", "pairs // batch, 2e-4,",
             "tests/benchmarks/test_gpu_suite.py::"
             "test_the_grid_part_runs_the_protocol_scores_tune_and_test_and_goes_on_where_it_stopped"),
    Mutation("grid_rates_beyond_without_end", "benchmarks/protocol.py::next_rate_beyond",
             "best > min(grid_rates) / 2**EXTENSIONS", "best > 0", EXTENSION),
    Mutation("grid_rates_beyond_toward_the_inside", "benchmarks/protocol.py::next_rate_beyond",
             "return best * 2", "return best / 2", EXTENSION),
    Mutation("grid_table_hides_the_rates_beyond", "benchmarks/protocol.py::grid_table",
             "t == first and r not in grid_rates", "t == first and r in grid_rates", EXTENSION),
    Mutation("multiway_rows_with_one_side", "hf_xlsr/data/multilingual.py::rows_with",
             "[all(row) for row in", "[any(row) for row in",
             "tests/test_multilingual.py::test_a_multiway_file_with_empty_cells_and_per_pair_files"),
    Mutation("pair_names_split_at_every_hyphen_when_stacked", "hf_xlsr/data/multilingual.py::stack_pairs",
             "first, second = pair_of(name, part.column_names)", 'first, second = name.split("-")', HYPHENS),
    Mutation("pair_names_split_at_every_hyphen_for_meanings", "hf_xlsr/data/multilingual.py::shared_meanings",
             "languages = pair_of(name, part.column_names)", 'languages = name.partition("#")[0].split("-")', HYPHENS),
    Mutation("per_pair_evaluators_split_at_every_hyphen", "hf_xlsr/trainers/run.py::heldout_evaluators",
             "part, pair_of(name, data_args.languages),", 'part, tuple(name.split("-")),',
             "tests/test_cli_and_arguments.py::test_per_pair_files_of_hyphenated_codes_train_and_score_each_pair"),
    Mutation("users_pair_split_at_every_hyphen", "hf_xlsr/data/multilingual.py::resolve_language_pairs",
             "pair = pair_of(entry, languages)", 'pair = tuple(entry.split("-"))', HYPHENS),
    Mutation("picks_from_read_on_test", "benchmarks/multilingual_grid.py::run_at_picks",
             'chosen = {arm: pick(json.loads(args.picks_from.read_text())["runs"], arm) for arm in args.grid}',
             'chosen = {arm: max((r for r in json.loads(args.picks_from.read_text())["runs"] if r["arm"] == arm), '
             'key=lambda r: r.get("bible", 0), default=None) for arm in args.grid}',
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_a_run_at_another_grids_picks_takes_each_arms_pick_on_tune_and_runs_three_seeds"),
    Mutation("grid_verdict_without_the_spread", "benchmarks/protocol.py::grid_verdict",
             "difference > spread", "difference > 0",
             "tests/benchmarks/test_protocol.py::test_the_verdict_reads_the_arms_done_and_says_the_rest_cannot_show_yet"),
    Mutation("grid_report_reads_off_the_pick", "benchmarks/protocol.py::at_pick",
             'and "bible" in run and point(run) == point(chosen)]', 'and "bible" in run]', GRID_REPORT),
    Mutation("grid_report_reads_one_direction", "benchmarks/report/languages.py::grid_figures",
             'return (test[f"retrieval_{en}2{language}_accuracy"] + test[f"retrieval_{language}2{en}_accuracy"]) / 2',
             'return test[f"retrieval_{en}2{language}_accuracy"]', GRID_REPORT),
    Mutation("grid_report_pairs_one_seed", "benchmarks/report/languages.py::multilingual_grid_paired",
             'if len(seeds["hf_xlsr"] & seeds["mnrl"]) < 2:', 'if len(seeds["hf_xlsr"] & seeds["mnrl"]) < 1:',
             GRID_REPORT),
    Mutation("grid_start_scored_at_every_call", "benchmarks/multilingual_grid.py::test_the_start",
             "if not any(run[\"arm\"] == START for run in results.runs()):", "if True:",
             "tests/benchmarks/test_multilingual_grid.py::"
             "test_only_the_picks_model_is_scored_on_test_and_the_chooser_never_reads_it"),
    # The site as a reader sees it
    Mutation("site_table_code_keeps_its_backslash", "docs/hooks.py::on_page_markdown",
             'span.group(0).replace("\\\\|", "|")', "span.group(0)",
             "tests/test_docs.py::test_the_site_builds_strictly"),
]  # fmt: skip


def run(mutation: Mutation | None, tests: list[str], python: str) -> tuple[int, float, str]:
    """Apply ``mutation`` (None: none) to a scratch copy and run ``tests`` there; pytest's exit code, seconds and
    the last lines of its report."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "repo"
        shutil.copytree(
            ROOT,
            copy,
            ignore=shutil.ignore_patterns(".venv", "runs", "__pycache__", "*.egg-info", ".cache", ".gpukit"),
        )
        if mutation is not None:
            path = copy / mutation.file
            try:
                path.write_text(mutate(path.read_text(), mutation))
            except StaleMutation as error:
                raise SystemExit(str(error)) from None
        start = time.time()
        result = subprocess.run(
            [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "", *tests],  # slow too
            cwd=copy,
            capture_output=True,
            text=True,
            env={**_environment(), "PYTHONPATH": str(copy)},
        )
        return result.returncode, time.time() - start, "\n".join(result.stdout.splitlines()[-25:])


def _environment() -> dict:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", help="names of the mutations to run")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    tests = list(dict.fromkeys(m.test for m in chosen))
    code, seconds, report = run(None, tests, sys.executable)  # the unmutated copy must pass them all
    if code != 0:
        raise SystemExit(f"{report}\nthe tests fail without any mutation (pytest exit {code}): fix them first")
    print(f"{len(tests)} tests pass unmutated ({seconds:.0f} s)", flush=True)
    survivors = []
    for mutation in chosen:
        code, seconds, _ = run(mutation, [mutation.test], sys.executable)
        caught = code == 1  # failed tests; 2-5 would be an interrupted or broken run, not a caught mutation
        print(
            f"{'caught  ' if caught else 'SURVIVED'} {mutation.name:<40} {seconds:5.0f} s  {mutation.test}", flush=True
        )
        if not caught:
            survivors.append(mutation.name)
    print(f"{len(chosen) - len(survivors)} of {len(chosen)} mutations caught")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
