"""Break one line of a paper's mechanism in a scratch copy of the repository and check that the test written for
it goes red. Each mutation is the bug a careful reader could make (or once made); the test named with it must fail.

    HF_HUB_OFFLINE=1 .venv/bin/python tests/mutations.py            # every mutation (about 15 minutes on 2 cores)
    HF_HUB_OFFLINE=1 .venv/bin/python tests/mutations.py --only cmlm_detached_prefix

Not collected by pytest (the name does not start with ``test_``); it runs pytest itself, once per mutation.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    before: str
    after: str
    test: str  # pytest node id, relative to the repository root


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
STAGES = (
    "tests/benchmarks/test_bench_mining_search.py::test_the_stages_of_a_search_are_faiss_training_adding_and_searching"
)
ONE_ENCODING = "tests/benchmarks/test_bench_mining_search.py::test_both_arms_mine_one_encoding_timed_once"
GPU_SEEDS = "tests/benchmarks/test_gpu_suite.py::test_seeds_of_two_calls_join_and_pool_over_devices"
GPU_OOM = "tests/benchmarks/test_gpu_suite.py::test_an_arm_out_of_memory_is_a_row_and_the_others_are_timed_interleaved"
PAIRING = "tests/test_mining.py::test_one_to_one_pairing_is_the_best_first_loop_without_its_loop"
CENTRED = "tests/test_mining.py::test_an_approximate_index_searches_each_language_centred_on_its_own_mean"
LINE_BUDGET = "tests/test_cli_and_arguments.py::test_a_short_train_and_encode_print_within_their_line_budget"
QUEUE_PROPERTY = (
    "tests/test_properties.py::test_the_queue_is_the_reference_after_any_enqueue_commit_rollback_and_wrap_around"
)
QUEUE_VS_BATCH = "tests/benchmarks/test_queue_vs_batch.py::"
CONTACCUM = "tests/benchmarks/test_contaccum.py::"
CACHED_EXACT = (
    "tests/test_cached_queue_loss.py::"
    "test_the_cached_loss_gives_the_plain_losss_value_gradients_and_queues[symmetric pairs with meaning ids]"
)
FIRST_LOG = "tests/test_trainer.py::test_the_first_log_line_of_a_queue_holds_no_statistic_of_an_empty_queue"
MUTATIONS = [
    # MoCo-BERT and every queue
    Mutation("moco_positive_from_query_encoder", M + "modeling_dual_momentum.py",
             'k_y = self.momentum_keys(*sides["y"], side="y")',
             "k_y = h_y.detach()",
             "tests/test_dual_momentum_model.py::test_positive_keys_come_from_the_momentum_encoder"),
    Mutation("queue_pointer_not_saved", M + "queue.py",
             'self.register_buffer("ptr", torch.zeros((), dtype=torch.long))',
             'self.register_buffer("ptr", torch.zeros((), dtype=torch.long), persistent=False)',
             "tests/test_trainer.py::test_resume_continues_exactly"),
    Mutation("keys_into_the_other_languages_queue", M + "momentum.py",
             "zip((keys_x, keys_y), (self.queue_x, self.queue_y), strict=True)",
             "zip((keys_x, keys_y), (self.queue_y, self.queue_x), strict=True)",
             "tests/test_dual_momentum_model.py::test_each_languages_keys_enter_its_own_queue"),
    Mutation("ema_in_bfloat16_allowed", M + "ema.py", "    if low:\n        raise ValueError(",
             "    if False:\n        raise ValueError(",
             "tests/test_dual_momentum_model.py::test_ema_refuses_low_precision_momentum_weights"),
    Mutation("ema_after_non_finite_gradients", "hf_xlsr/trainers/callbacks.py",
             "if skipped or not self._finite_gradients:", "if skipped:",
             "tests/test_trainer.py::test_a_step_with_non_finite_gradients_leaves_no_trace_in_queue_or_momentum_encoder"),
    Mutation("non_finite_keys_queued", M + "momentum.py", "if not bool(rows[:, -1].min() > 0):", "if False:",
             "tests/test_dual_momentum_model.py::test_a_non_finite_loss_queues_nothing"),
    Mutation("no_warning_without_ema", M + "momentum.py", "and not self._warned:", "and False:",
             "tests/test_trainer.py::test_a_plain_trainer_that_never_runs_the_ema_is_warned"),
    Mutation("own_example_not_masked", M + "losses.py", "queue_logsumexp(q, queue, scale, query_ids, queue_ids)",
             "queue_logsumexp(q, queue, scale, None, queue_ids)",
             "tests/test_queue_and_losses.py::test_info_nce_with_in_batch_keys_margin_queue_and_example_ids"),
    Mutation("blocked_gradient_not_rescaled", M + "losses.py",
             "weighted.mul_(rescale[:, None]).add_(float32_product(weights, block))",
             "weighted.add_(float32_product(weights, block))",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("blocked_sum_not_rescaled", M + "losses.py", "total.mul_(rescale).add_(weights.sum(dim=1))",
             "total.add_(weights.sum(dim=1))",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("masked_rows_shifted_by_minus_infinity", M + "losses.py", "shift = new_max.clamp(min=lowest)",
             "shift = new_max",
             "tests/test_queue_and_losses.py::test_blocked_queue_logsumexp_and_its_gradient_match_float64"),
    Mutation("lightweight_queue_live_positives", M + "modeling_lightweight.py",
             "keys_y = self.momentum_keys(target_input_ids, target_attention_mask)",
             'keys_y = embeddings["target_embeddings"].detach()',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    Mutation("cmlm_queue_live_positives", M + "modeling_cmlm.py",
             "keys_y = self.momentum_keys(target_input_ids, target_attention_mask)",
             'keys_y = parts["target_embeddings"].detach()',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    Mutation("hictl_queue_live_positives", M + "modeling_hictl.py",
             "                        self.momentum_keys(target_input_ids, target_attention_mask),\n",
             '                        parts["target_embeddings"].detach(),\n',
             "tests/test_queue_extension.py::test_queued_loss_takes_every_key_from_the_momentum_encoder"),
    # Lightweight
    Mutation("ugt_target_from_own_bag", M + "modeling_lightweight.py",
             "target_u = unified_generative_target(bag_y,", "target_u = unified_generative_target(bag_x,",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("ugt_half_share_on_the_wrong_side", M + "modeling_lightweight.py",
             "masked_token, masked_side == 0)", "masked_token, masked_side == 1)",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("l_sim_on_u_u", M + "modeling_lightweight.py", "sim = in_batch_similarity_loss(u, v)",
             "sim = in_batch_similarity_loss(u, u)",
             "tests/test_lightweight.py::test_model_losses_against_float64_references"),
    Mutation("l_sim_averaged", M + "losses.py", ".clamp(min=eps - 1)).sum()", ".clamp(min=eps - 1)).mean()",
             "tests/test_lightweight.py::test_alignment_and_similarity_losses_match_float64_references"),
    Mutation("fc_linear_only", M + "modeling_lightweight.py",
             "transformed = self.generative_norm(F.silu(self.generative_dense(states)))",
             "transformed = self.generative_dense(states)",
             "tests/test_lightweight.py::test_generative_logits_use_the_fc_layer_and_the_input_embeddings"),
    # HICTL
    Mutation("hictl_uniform_negatives", M + "modeling_hictl.py",
             "similarities, excluded, self.config.num_negatives, self.config.negative_sampling_temperature",
             "similarities, excluded, self.config.num_negatives, 1e9",
             "tests/test_hictl.py::test_sampled_word_negatives_are_hard"),
    Mutation("hictl_word_query_not_cls", M + "modeling_hictl.py",
             "self.word_level_loss(states[:, 0],", "self.word_level_loss(states[:, 1],",
             "tests/test_hictl.py::test_word_level_query_is_the_pairs_first_token"),
    Mutation("hictl_monolingual_copy_visible", "hf_xlsr/trainers/collators.py",
             "[masked_x[j] for j in order],", "[x_ids[j] for j in order],",
             "tests/test_hictl.py::test_monolingual_mlm_cannot_copy_from_the_reordered_half"),
    Mutation("hictl_whitespace_reordering_only", "hf_xlsr/trainers/collators.py", "if len(groups) < 2:", "if False:",
             "tests/test_hictl.py::test_monolingual_sentences_without_spaces_are_reordered_by_pieces"),
    # CMLM
    Mutation("cmlm_detached_prefix", M + "modeling_cmlm.py",
             "projected = self.project(self.sentence_vector(first_ids, first_mask))",
             "projected = self.project(self.sentence_vector(first_ids, first_mask).detach())",
             "tests/test_cmlm.py::test_the_first_sentences_encoder_gets_the_cmlm_gradient"),
    Mutation("cmlm_prefix_masked_out", M + "modeling_cmlm.py", "second_mask.new_ones(projected.shape[:2])",
             "second_mask.new_zeros(projected.shape[:2])", "tests/test_cmlm.py::test_cmlm_uses_the_first_sentence"),
    Mutation("cmlm_new_head_not_warmed", "hf_xlsr/trainers/trainer.py",
             'if getattr(self.model, "encoder_frozen_steps", 0):', "if False:",
             "tests/test_cmlm.py::test_a_new_masked_lm_head_trains_alone_first"),
    Mutation("cmlm_s1_s2_swapped", M + "configuration_cmlm.py",
             '{"s1": "cmlm+br", "s2": "cmlm->br"', '{"s1": "cmlm->br", "s2": "cmlm+br"',
             "tests/test_cmlm.py::test_schedules_switch_losses_at_the_second_stage"),
    Mutation("rows_not_numbered", "hf_xlsr/trainers/trainer.py",
             'return dataset.add_column("example_id", list(range(len(dataset))))', "return dataset",
             "tests/test_trainer.py::test_training_rows_are_numbered_for_the_queue_and_a_queue_as_large_as_an_epoch_is_flagged"),
    # MomentumQueueLoss for sentence-transformers
    Mutation("st_loss_live_keys", M + "momentum.py", "self._key_vector(self.momentum_contrast.momentum, *inputs",
             "self._key_vector(self._key_modules(), *inputs",
             "tests/test_st_loss.py::test_the_loss_takes_its_positives_and_negatives_from_the_momentum_copy"),
    Mutation("st_loss_state_not_restored", "hf_xlsr/sentence_transformers.py",
             "load_model(self.target.momentum_contrast, path, device=str(next(self.target.parameters()).device))",
             "pass",
             "tests/test_st_loss.py::test_resume_restores_queue_pointer_and_momentum_model_exactly"),
    Mutation("st_loss_without_callback_allowed", "hf_xlsr/sentence_transformers.py", "strict=True, sides=sides)",
             "strict=False, sides=sides)",
             "tests/test_st_loss.py::test_training_without_the_callback_is_refused"),
    Mutation("router_card_shows_encode_query", "hf_xlsr/export.py",
             "exported.model_card_data.ir_model = False", "pass",
             "tests/test_export.py::test_a_dual_encoder_exports_one_folder_routed_by_language"),
    # Evaluation and configuration
    Mutation("probe_on_raw_vectors", "hf_xlsr/evaluation/probe.py",
             "classifier = make_pipeline(StandardScaler(), LogisticRegression(",
             "classifier = make_pipeline(LogisticRegression(",
             "tests/test_evaluation.py::test_linear_probe_sees_classes_under_a_dominant_shared_direction"),
    Mutation("model_config_training_values_ignored", "hf_xlsr/trainers/arguments.py",
             "return config_class(**model_config)", "return config_class()",
             "tests/test_cli_and_arguments.py::test_one_rule_for_training_values_explicit_then_run_config_then_paper"),
    # Precision, distributed engines, the host's view of the queue
    Mutation("scores_under_autocast", M + "losses.py", "with torch.autocast(device_type=device, enabled=False):",
             "with torch.autocast(device_type=device, enabled=torch.is_autocast_enabled(device)):",
             PRECISION + "[info_nce_with_queue]"),
    Mutation("momentum_keys_switch_the_callers_autocast_off", M + "momentum.py",
             "context = contextlib.nullcontext()", "context = torch.autocast(device, enabled=False)",
             "tests/test_precision.py::test_under_a_callers_bf16_autocast_the_momentum_keys_are_bf16_too[cmlm]"),
    Mutation("momentum_loss_keys_ignore_the_trainers_precision", "hf_xlsr/sentence_transformers.py",
             "self.target.key_autocast = torch.bfloat16 if args.bf16 else torch.float16 if args.fp16 else None",
             "self.target.key_autocast = None",
             "tests/test_st_loss.py::test_under_bf16_training_the_momentum_forward_runs_in_bf16_as_the_live_one"),
    Mutation("cached_rows_scored_against_the_first_rows_keys", "hf_xlsr/sentence_transformers.py",
             "offset=start, **options).loss  # fmt: skip", "**options).loss  # fmt: skip", CACHED_EXACT),
    Mutation("cached_parts_not_weighted_by_their_rows", "hf_xlsr/sentence_transformers.py",
             "part = self._loss_of_rows(queries, candidates, anchor_keys, ids, n, start) * (len(chunks[0]) / n)",
             "part = self._loss_of_rows(queries, candidates, anchor_keys, ids, n, start)", CACHED_EXACT),
    Mutation("tatoeba_mined_from_english", "hf_xlsr/evaluation/tatoeba.py",
             "mining_f1(encoder(sentences, self.language_of[code]), encoder(english, \"en\"))",
             "mining_f1(encoder(english, \"en\"), encoder(sentences, self.language_of[code]))",
             "tests/test_tatoeba.py::test_the_score_is_the_weighted_f1_of_the_nearest_english_sentence"),
    Mutation("hictl_forward_documents_sides", M + "modeling_hictl.py",
             "            source_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):",
             "            x_input_ids (`torch.LongTensor` of shape `(batch_size, source_length)`, *optional*):",
             KEYS + "test_docstrings_of_the_public_api_name_the_arguments_the_signatures_take"),
    Mutation("blank_lines_read_as_rows", "hf_xlsr/data/bitext.py",
             "        if text.strip():\n            yield number", "        if True:\n            yield number",
             "tests/test_data.py::test_blank_lines_are_skipped_and_counted_as_pandas_and_datasets_skip_them[tsv]"),
    Mutation("earlier_option_spelling_ignored", "hf_xlsr_cli.py", "        setattr(namespace, self.dest, values)",
             "        pass",
             "tests/test_mining.py::test_the_earlier_spellings_of_mine_and_export_options_still_work_with_a_notice"),
    Mutation("blocked_gradient_saved_in_queue_dtype", M + "losses.py",
             "ctx.save_for_backward((weighted * inverse[:, None]).to(queries.dtype))",
             "ctx.save_for_backward((weighted * inverse[:, None]).to(keys.dtype))",
             "tests/test_queue_and_losses.py::test_blocked_scoring_of_a_float16_queue_matches_its_float32_values"),
    Mutation("momentum_weights_as_parameters", M + "ema.py",
             "if parameter is not None and id(parameter) not in shared:", "if False:",
             "tests/test_multiprocess.py::test_deepspeed_zero2_in_bf16_trains_a_momentum_encoder_with_a_float32_ema"),
    Mutation("momentum_state_broadcast_by_ddp", M + "distributed.py",
             "nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, names)", "pass",
             DDP),
    Mutation("keys_gathered_one_tensor_at_a_time", M + "momentum.py", "rows = gather_rows(torch.cat(columns, dim=1))",
             "rows = torch.cat([gather_rows(column) for column in columns], dim=1)", DDP),
    Mutation("pointers_read_from_the_device", M + "queue.py", "if name not in cache or cache[name][0] != stamp:",
             "if True:", "tests/test_dual_momentum_model.py::test_a_training_step_reads_one_value_from_the_device"),
    Mutation("gradient_norm_computed_again", "hf_xlsr/trainers/trainer.py",
             "self._momentum_callback.gradient_norm = grad_norm", "pass",
             "tests/test_trainer.py::test_a_step_with_non_finite_gradients_leaves_no_trace_in_queue_or_momentum_encoder"
             "[clipping]"),
    # MomentumQueueLoss and sentence-transformers' conventions
    Mutation("st_loss_directions_summed", "hf_xlsr/sentence_transformers.py", "loss = (loss + backward.loss) / 2",
             "loss = loss + backward.loss",
             "tests/test_st_loss.py::test_mnrl_is_this_loss_with_an_empty_queue_and_live_keys[2-True]"),
    Mutation("st_loss_anchor_queue_without_symmetry", "hf_xlsr/sentence_transformers.py",
             'sides = ("x", "y") if symmetric else ("y",)', 'sides = ("x", "y")',
             "tests/test_st_loss.py::test_without_symmetry_the_anchors_get_no_momentum_forward_and_no_queue"),
    Mutation("st_loss_hard_negatives_dropped", "hf_xlsr/sentence_transformers.py",
             "exclude = ~own.repeat(1, columns)", "exclude = ~torch.nn.functional.pad(own, (0, n * (columns - 1)))",
             "tests/test_st_loss.py::test_hard_negatives_count_without_in_batch_negatives"),
    Mutation("st_loss_labels_drop_hard_negatives", "hf_xlsr/sentence_transformers.py",
             "return torch.cat([ids, ids.new_full((len(ids) * (columns - 1),), -1)])", "return ids.repeat(columns)",
             "tests/test_st_loss.py::test_labels_keep_every_hard_negative"),
    Mutation("pair_files_keep_their_own_meanings", "hf_xlsr/data/multilingual.py",
             "                    parent[other] = root\n", "                    pass\n",
             "tests/test_multilingual.py::test_a_pivot_sentence_shared_by_two_pair_files_is_one_meaning"),
    Mutation("verse_id_forgets_the_chapter", "hf_xlsr/data/corpora.py",
             "return book * 1_000_000 + chapter * 1_000 + verse", "return book * 1_000_000 + verse",
             "tests/test_multilingual.py::test_bible_pairs_share_one_id_per_verse_across_languages"),
    Mutation("sampler_default_alpha_of_its_own", "hf_xlsr/data/multilingual.py",
             "        alpha: float = LANGUAGE_SAMPLING_ALPHA,", "        alpha: float = 1.0,",
             "tests/test_multilingual.py::test_one_default_sampling_temperature_whatever_the_arguments"),
    Mutation("export_reads_one_training_source", "hf_xlsr/export.py", "    if isinstance(train_data, Mapping):",
             "    if False:",
             "tests/test_cli_and_arguments.py::test_a_run_on_per_pair_files_exports_with_its_training_datasets"),
    Mutation("statistics_of_an_empty_queue_logged", "hf_xlsr/trainers/trainer.py", "if not math.isnan(value)})",
             "if True})", FIRST_LOG),
    Mutation("accuracy_without_negatives_counted", M + "losses.py",
             "correct = correct.masked_fill(~negative.any(dim=1), math.nan)", "correct = correct", FIRST_LOG),
    Mutation("paper_warm_up_for_a_short_run", "hf_xlsr/trainers/trainer.py",
             'if "warmup_steps" in paper and warmup >= 1 and warmup > WARMUP_SHARE * num_training_steps:', "if False:",
             "tests/test_trainer.py::test_a_ten_step_run_warms_up_for_a_tenth_of_itself_not_the_papers_400_steps"),
    Mutation("output_dir_writability_not_checked", "hf_xlsr/trainers/arguments.py",
             "                check_writable(value, name)", "                pass",
             "tests/test_cli_errors.py::test_train_checks_its_output_folders_can_be_written_before_training"),
    Mutation("misspelt_override_not_named", "hf_xlsr/trainers/arguments.py", "        if name not in known:",
             "        if False:", "tests/test_cli_errors.py::test_a_misspelt_override_names_the_closest_field"),
    Mutation("evaluation_encodes_a_sentence_again", "hf_xlsr/evaluation/encoders.py",
             "new = list(dict.fromkeys(s for s in sentences if (language, s) not in self.vectors))",
             "new = list(dict.fromkeys(sentences))",
             "tests/test_evaluation.py::test_an_evaluation_encodes_each_sentence_of_each_language_once"),
    Mutation("push_works_before_asking_the_hub", "hf_xlsr/hub.py", "        HfApi(token=token).whoami()",
             "        pass", "tests/test_cli_errors.py::test_push_without_a_token_or_a_network_says_so_in_one_line"),
    Mutation("untrained_language_not_marked", "hf_xlsr_cli.py",
             'untrained = [language for language in args.languages if trained and language not in trained]',
             "untrained = []",
             "tests/test_evaluation.py::test_evaluate_marks_the_languages_never_trained_and_times_each_task"),
    Mutation("queue_slots_ignore_the_pointer", M + "queue.py",
             "slots = (start + torch.arange(n - kept, n, device=self.keys.device)) % self.size",
             "slots = torch.arange(n - kept, n, device=self.keys.device) % self.size", QUEUE_PROPERTY),
    Mutation("rollback_leaves_the_keys", M + "queue.py",
             "self.keys[slots], self.ids[slots] = old_keys, old_ids", "self.ids[slots] = old_ids", QUEUE_PROPERTY),
    Mutation("ids_cross_the_gather_as_floats", M + "momentum.py",
             "all_ids = torch.stack([rows[:, -3], rows[:, -2]], dim=1).view(torch.long).reshape(-1)",
             "all_ids = rows[:, -3].long()",
             "tests/test_properties.py::test_keys_and_64_bit_meaning_ids_cross_the_gather_packed_in_one_float32_row"),
    Mutation("given_meaning_ids_ignored", "hf_xlsr/data/multilingual.py",
             'linked += [("id", namespace, own)] if own is not None and own >= 0 else []', "linked += []",
             "tests/test_properties.py::"
             "test_two_rows_share_a_meaning_id_exactly_when_a_chain_of_shared_sentences_or_ids_joins_them"),
    Mutation("progress_bars_left_on", "hf_xlsr_cli.py", '        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"\n',
             "        pass\n", LINE_BUDGET),
    Mutation("deepspeed_notice_kept", "hf_xlsr_cli.py",
             '    logging.getLogger("DeepSpeed").addFilter(', '    (lambda filter: None)(', LINE_BUDGET),
    Mutation("memory_pinned_without_a_gpu", "hf_xlsr/trainers/trainer.py",
             "            self.dataloader_pin_memory = False  #", "            pass  #", LINE_BUDGET),
    Mutation("run_languages_checked_only_when_read", "hf_xlsr/trainers/arguments.py",
             "        have = corpus_languages(source)", "        have = None",
             "tests/test_cli_errors.py::test_a_language_the_corpus_lacks_lists_the_corpus_languages"),
    Mutation("evaluate_languages_checked_only_when_read", "hf_xlsr_cli.py",
             "    check_evaluation_languages(args.data, args.languages)", "    pass",
             "tests/test_cli_errors.py::test_evaluate_names_a_language_the_data_lacks_and_leaves_no_folder"),
    Mutation("wrong_type_prints_the_usage", "hf_xlsr/trainers/arguments.py", "        raise ConfigFileError(message)",
             "        super().error(message)",
             "tests/test_cli_errors.py::test_a_wrong_type_in_the_file_names_the_file_and_field"),
    Mutation("encoder_reference_not_checked", "hf_xlsr/trainers/arguments.py",
             "        check_reference(reference, name, where)", "        pass",
             "tests/test_cli_errors.py::test_an_encoder_that_is_not_here"),
    Mutation("generated_tables_not_rewritten", "benchmarks/readme_tables.py",
             "return match.group(1) + tables[name] + match.group(4)", "return match.group(0)",
             "tests/benchmarks/test_readme_tables.py::test_a_typed_figure_in_a_generated_block_is_caught"),
    Mutation("own_meaning_in_batch", M + "losses.py",
             "negative &= (query_ids[:, None] != key_ids[None, :]) | (query_ids[:, None] < 0)", "pass",
             "tests/test_st_loss.py::test_labels_are_meaning_ids_that_mask_translations_in_the_batch_and_the_queue"),
    # Many languages
    Mutation("third_language_translation_queued_as_negative", M + "losses.py",
             "queue_logsumexp(q, queue, scale, query_ids, queue_ids)",
             "queue_logsumexp(q, queue, scale, None, queue_ids)", THIRD_LANGUAGE),
    Mutation("same_meaning_in_batch_negatives", M + "losses.py",
             "same = (ids[:, None] == ids[None, :]) & (ids[:, None] >= 0)",
             "same = torch.zeros(n, n, dtype=torch.bool, device=device)", THIRD_LANGUAGE),
    Mutation("pairs_drawn_uniformly", "hf_xlsr/data/multilingual.py",
             "weights = [n**alpha if n else 0.0 for n in sizes]", "weights = [1.0 for n in sizes]",
             "tests/test_multilingual.py::test_pairs_are_drawn_with_probability_proportional_to_size_to_the_alpha[1.0]"),
    Mutation("one_pair_batches_mixed", "hf_xlsr/data/multilingual.py",
             'self.block = batch_size if batches == "one_pair" else 1', "self.block = 1",
             "tests/test_multilingual.py::test_one_pair_batches_and_mixed_batches"),
    # The command line
    Mutation("output_dir_file_not_checked", "hf_xlsr/trainers/arguments.py", "if value and Path(value).is_file():",
             "if False:",
             "tests/test_cli_errors.py::test_an_output_dir_that_is_a_file_is_refused_before_anything_loads"),
    Mutation("training_seed_draws_the_sample", "hf_xlsr/trainers/run.py", '"seed": data_args.eval_seed',
             '"seed": 42', SAMPLE),
    Mutation("files_keep_private_modes", "hf_xlsr/utils.py",
             "entry.chmod((0o777 if entry.is_dir() else 0o666) & ~umask)", "pass", SAMPLE),
    Mutation("mining_language_not_checked", "hf_xlsr_cli.py", "        if language not in languages:",
             "        if False:",
             "tests/test_mining.py::test_mine_infers_the_two_routes_names_a_wrong_language_and_warns_about_one_file"),
    # mining
    Mutation("pairing_round_ignores_targets", "hf_xlsr/evaluation/mining/margin.py",
             "winners = left[first_of_source & first_of_target]", "winners = left[first_of_source]", PAIRING),
    Mutation("each_direction_trains_its_own_index", "hf_xlsr/evaluation/mining/margin.py",
             "centres=centres) if approximate else None", "centres=centres) if False else None",
             "tests/test_mining.py::test_one_trained_index_serves_both_directions_and_factory_strings_are_indexes"),
    Mutation("mine_sides_not_centred", "hf_xlsr/evaluation/mining/margin.py",
             "if centre and approximate else None", "if False else None", CENTRED),
    Mutation("queries_searched_uncentred", "hf_xlsr/evaluation/mining/search.py",
             "prepared.search(_centred(block.copy(), query_centre) if centres else block, asked)",
             "prepared.search(block, asked)", CENTRED),
    Mutation("candidates_keep_the_centred_cosine", "hf_xlsr/evaluation/mining/search.py",
             "faiss.fvec_inner_products_by_idx(faiss.swig_ptr(found),", "(faiss.swig_ptr(found),", CENTRED),
    Mutation("candidate_cosine_unnormalised", "hf_xlsr/evaluation/mining/search.py",
             "found *= inverse_norm[np.maximum(where, 0)]", "pass",
             "tests/test_mining.py::test_a_query_whose_scanned_lists_hold_too_few_vectors_is_searched_exactly"),
    Mutation("scan_padded_block_rows_out_of_order", "hf_xlsr/evaluation/mining/search.py",
             "padded = np.resize(block, -(-len(block) // quarter) * quarter)",
             "padded = np.resize(block[::-1], -(-len(block) // quarter) * quarter)", SCAN),
    Mutation("mapped_vectors_not_centred", "hf_xlsr/evaluation/mining/search.py",
             "block = _mapped(block, transform) if transform else block",
             "block = _mapped(_unit_float32(vectors[start : start + block_size]), transform) if transform else block",
             SCAN),
    Mutation("int8_queries_keep_the_corpus_scale", "hf_xlsr/evaluation/mining/search.py",
             "        scaled = block / scale\n", "        scaled = block.copy()\n", SCAN),
    Mutation("int8_corpus_scaled_vector_by_vector", "hf_xlsr/evaluation/mining/search.py",
             "        scaled = block * scale\n",
             "        scaled = block * 127 / np.abs(block).max(axis=1, keepdims=True)\n", SCAN),
    Mutation("device_chunks_indexed_from_zero", "hf_xlsr/evaluation/mining/device.py", "            place += first\n",
             "", DEVICE + "test_every_vector_scored_in_chunks_finds_what_a_float64_search_finds"),
    Mutation("device_candidates_not_rescored", "hf_xlsr/evaluation/mining/device.py",
             "block, stored[where])", "block, low[where].float())",
             DEVICE + "test_every_vector_scored_in_chunks_finds_what_a_float64_search_finds"),
    Mutation("a_job_leaves_the_corpus_off_the_device", "hf_xlsr/evaluation/mining/search.py",
             "    if device := _device_of(index, corpus):", "    if False:",
             DEVICE + "test_a_job_in_shards_on_the_device_moves_each_corpus_there_once_and_pairs_what_one_search_"
             "pairs"),
    Mutation("auto_ignores_the_device", "hf_xlsr/evaluation/mining/index.py",
             'if index == "auto" and n >= IVF_THRESHOLD and search_device(n, dim):', "if False:",
             DEVICE + "test_auto_searches_every_vector_where_a_device_holds_the_corpus"),
    Mutation("joined_parts_take_the_calls_command", "benchmarks/gpu_suite.py",
             'part = {"command": report.get("command"), "date": report["date"], **part}',
             'part = {**part, "command": report.get("command"), "date": report["date"]}',
             "tests/benchmarks/test_gpu_suite.py::test_reports_of_two_calls_join_into_one"),
    Mutation("every_query_scanned_at_once", "hf_xlsr/evaluation/mining/search.py",
             "scan_size = block_size * max(1, SCAN_QUERIES // block_size)", "scan_size = len(queries)", SCAN),
    Mutation("kept_ties_broken_by_chance", "hf_xlsr/evaluation/mining/search.py",
             "torch.sort(torch.from_numpy(values), stable=True)",
             "torch.sort(torch.from_numpy(values), stable=False)",
             "tests/test_mining_job.py::test_shards_of_queries_give_the_pairs_of_one_search"),
    Mutation("corpus_added_uncentred", "hf_xlsr/evaluation/mining/search.py",
             "built.add(_centred(_unit_float32(corpus[start : start + block_size]), centre))",
             "built.add(_unit_float32(corpus[start : start + block_size]))", CENTRED),
    Mutation("lists_trained_uncentred", "hf_xlsr/evaluation/mining/search.py", "            _centred(part, centre)\n",
             "", CENTRED),
    Mutation("one_language_below_the_peer", "benchmarks/bench_mining_search.py",
             "(exact['recall'] - run['recall']):.1f} | {100 * run['best_f1']:.1f} |",
             "(peer['recall'] - run['recall']):.1f} | {100 * run['best_f1']:.1f} |",
             "tests/benchmarks/test_bench_mining_search.py::"
             "test_the_one_language_table_sets_each_arm_against_the_peer_and_exact_search"),
    Mutation("kit_without_transformers", "benchmarks/gpu_kit.py",
             '"faiss-cpu", "transformers", "sentence-transformers")', '"faiss-cpu", "sentence-transformers")',
             "tests/benchmarks/test_gpu_kit.py::"
             "test_the_kit_installs_without_an_index_and_runs_the_dry_run_in_the_images_packages"),
    Mutation("framework_version_from_metadata", "hf_xlsr/trainers/run.py", '"hf_xlsr": __version__}',
             '"hf_xlsr": version("hf_xlsr")}',
             "tests/benchmarks/test_gpu_kit.py::"
             "test_the_kit_installs_without_an_index_and_runs_the_dry_run_in_the_images_packages"),
    Mutation("mining_gold_is_the_shuffle", "benchmarks/gpu_suite.py", "gold[order] = np.arange(per_side)",
             "gold[:] = order",
             "tests/benchmarks/test_gpu_suite.py::test_mining_sides_are_distinct_sentences_whose_gold_pairs_are_translations"),
    Mutation("gpu_report_written_at_the_end_only", "benchmarks/gpu_suite.py",
             "        write(report, Path(args.out))  # after each part", "        pass  # after each part",
             "tests/benchmarks/test_gpu_suite.py::test_a_call_cut_short_keeps_the_parts_it_finished"),
    Mutation("mining_size_one_side", "benchmarks/gpu_suite.py", "(2 * 2 / rate + SEARCH_SECONDS)",
             "(2 / rate + SEARCH_SECONDS)",
             "tests/benchmarks/test_gpu_suite.py::test_the_mining_takes_as_many_sentences_as_the_parts_time_holds"),
    Mutation("coverage_home_of_the_query", "benchmarks/mining_corpus.py",
             "_, home = quantizer.search(y[targets], 1)", "_, home = quantizer.search(x[queries], 1)",
             "tests/benchmarks/test_bench_mining_search.py::test_a_match_is_found_only_in_the_lists_its_query_scans"),
    Mutation("timing_of_another_setup", "benchmarks/bench_queue_vs_batch.py",
             "if any(ours[key] != timed[\"setup\"][key] for key in keys):", "if False:",
             "tests/benchmarks/test_queue_vs_batch.py::test_a_results_file_is_reported_with_its_own_timing_only"),
    Mutation("weight_state_without_the_moments", "benchmarks/bench_queue_vs_batch.py",
             "for value in state.values() if torch.is_tensor(value))",
             "for value in state.values() if torch.is_tensor(value) and value.ndim == 0)",
             QUEUE_VS_BATCH + "test_the_weights_training_state_is_a_gradient_and_two_moments_per_weight"),
    Mutation("memory_verdict_rest_is_the_whole", "benchmarks/bench_queue_vs_batch.py",
             "rest = {a: memory[a] - state[a] for a in (ours, peer)}", "rest = {a: memory[a] for a in (ours, peer)}",
             QUEUE_VS_BATCH + "test_the_memory_verdict_sets_the_weights_state_apart"),
    Mutation("held_memory_read_after_the_build", "benchmarks/bench_queue_vs_batch.py",
             "        reset_peak()\n        unbuilt = memory_mb(\"VmRSS\")\n        trainer, _ = build(arm, path, "
             "train, args.languages, steps, args.learning_rate, output_dir, 0, args.max_length)\n",
             "        trainer, _ = build(arm, path, train, args.languages, steps, args.learning_rate, output_dir, 0, "
             "args.max_length)\n        reset_peak()\n        unbuilt = memory_mb(\"VmRSS\")\n",
             QUEUE_VS_BATCH + "test_the_memory_a_queue_arm_holds_counts_its_momentum_copy"),
    Mutation("contrasts_paired_over_sorted_values", "benchmarks/readme_tables.py",
             "a, b = (list(side) for side in zip(*paired(runs, arm, base, key, base_key).values(), strict=True))",
             "a, b = (sorted(side) for side in zip(*paired(runs, arm, base, key, base_key).values(), strict=True))",
             "tests/benchmarks/test_readme_tables.py::test_a_claims_contrast_pairs_runs_by_seed_on_the_seeds_both_arms_ran"),
    Mutation("pairs_over_the_seeds_either_arm_ran", "benchmarks/compare.py",
             "seeds = sorted(by_side[0].keys() & by_side[1].keys())",
             "seeds = sorted(by_side[0].keys() | by_side[1].keys())",
             "tests/benchmarks/test_readme_tables.py::test_a_claims_contrast_pairs_runs_by_seed_on_the_seeds_both_arms_ran"),
    Mutation("superseded_mining_runs_reported", "benchmarks/bench_mining_scale.py",
             'return [run for run in runs if "superseded" not in run]', "return runs",
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_superseded_run_stays_in_the_file_and_leaves_the_table_and_the_fit"),
    Mutation("momentum_copy_copies_the_tokenizer", "hf_xlsr/modeling/ema.py",
             "                shared[id(tokenizer)] = tokenizer", "                pass",
             "tests/test_st_loss.py::test_the_momentum_copy_owns_its_weights_and_shares_the_tokenizer"),
    Mutation("superseded_run_counted_as_done", "benchmarks/common.py",
             'and "superseded" not in run for run in runs)', "for run in runs)",
             "tests/benchmarks/test_bench_mining_scale.py::test_a_superseded_run_is_run_again_and_the_file_keeps_both"),
    Mutation("uncached_queue_not_shown_as_its_twin", "benchmarks/bench_queue_vs_batch.py",
             ', "mql_8B_K256B": "CachedMomentumQueueLoss 8B"}', "}",
             "tests/benchmarks/test_queue_vs_batch.py::test_an_arm_timed_but_not_trained_is_shown_as_its_gradcache_twin"),
    Mutation("queue_bench_rows_ignore_their_block", "benchmarks/bench_queue.py",
             "losses.QUEUE_BLOCK_SIZE = block or losses.QUEUE_BLOCK_SIZE", "pass",
             "tests/benchmarks/test_bench_queue.py::test_a_blocked_row_scores_the_queue_in_its_own_blocks"),
    Mutation("queue_floor_one_direction", "benchmarks/bench_queue.py", "pairs = round(2 * size / width)",
             "pairs = round(size / width)",
             "tests/benchmarks/test_bench_queue.py::test_the_floor_counts_both_products_of_both_directions"),
    Mutation("rule_rows_hide_their_products", "benchmarks/bench_mining_scale.py",
             "products\" if len(shown) > 1 else \"\"", "products\" if False else \"\"",
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_rule_table_of_two_product_dtypes_names_each_rows_dtype_and_sets_it_against_the_first"),
    Mutation("rule_probes_uncapped", "benchmarks/bench_mining_scale.py",
             'value = {"r": root, "p": min(root // 12, 64)}', 'value = {"r": root, "p": root // 12}',
             "tests/benchmarks/test_bench_mining_scale.py::"
             "test_a_rule_setting_fills_its_lists_and_probes_and_their_multiples"),
    Mutation("contaccum_bank_one_micro_batch_too_long", "benchmarks/contaccum.py",
             "self.queries: deque[torch.Tensor] = deque(maxlen=bank_batches)",
             "self.queries: deque[torch.Tensor] = deque(maxlen=bank_batches + 1)",
             CONTACCUM + "test_each_micro_batch_is_scored_against_itself_and_the_banked_pairs_of_both_columns"),
    Mutation("contaccum_bank_keeps_the_gradient_graph", "benchmarks/contaccum.py",
             "self.queries.append(query.detach())", "self.queries.append(query)",
             CONTACCUM + "test_each_micro_batch_is_scored_against_itself_and_the_banked_pairs_of_both_columns"),
    Mutation("contaccum_meaning_ids_not_masked", "benchmarks/contaccum.py",
             'scores = scores.masked_fill(same, float("-inf"))', 'scores = scores.masked_fill(same & False, 0.0)',
             CONTACCUM + "test_each_micro_batch_is_scored_against_itself_and_the_banked_pairs_of_both_columns"),
    Mutation("contaccum_one_optimizer_step_per_micro_batch", "benchmarks/bench_queue_vs_batch.py",
             'accumulation = s["batch"]  # micro-batches of B', 'accumulation = 1  # micro-batches of B',
             CONTACCUM + "test_the_arm_accumulates_micro_batches_of_b_into_one_step_and_keeps_its_bank_across_steps"),
    Mutation("memory_verdict_without_what_is_held", "benchmarks/bench_queue_vs_batch.py",
             'return row.get("held_mb", row["training_mb"])', 'return row["training_mb"]',
             QUEUE_VS_BATCH + "test_the_memory_verdict_prefers_what_an_arm_holds"),
    Mutation("equal_time_reads_the_peers_share", "benchmarks/bench_queue_vs_batch.py",
             "share = min(1.0, 1 / ratio)", "share = min(1.0, ratio)",
             QUEUE_VS_BATCH + "test_the_equal_time_verdict_reads_each_run_where_it_has_spent_the_peers_time"),
    Mutation("equal_time_read_at_the_nearest_point", "benchmarks/bench_queue_vs_batch.py",
             "return x + (y - x) * (share - a) / (b - a)", "return x",
             QUEUE_VS_BATCH + "test_the_equal_time_verdict_reads_each_run_where_it_has_spent_the_peers_time"),
    Mutation("step_floor_against_another_batch", "benchmarks/bench_dual_momentum_step.py",
             'keys, peer = row.get("keys_seconds"), peers[row["batch_size"]]',
             'keys, peer = row.get("keys_seconds"), peers[min(peers)]',
             "tests/benchmarks/test_bench_step.py::test_the_floor_is_the_peers_step_of_the_same_batch_plus_the_keys"),
    Mutation("cached_queue_memory_without_the_momentum_copy", "benchmarks/bench_queue_vs_batch.py",
             'own = peer["state_mb"] / 3 + 2 * keys * DIMENSION * 4 / 2**20', "own = 2 * keys * DIMENSION * 4 / 2**20",
             QUEUE_VS_BATCH + "test_the_cached_queue_is_held_against_cachedmnrl_plus_the_queues_own_state"),
    Mutation("joined_seeds_keep_the_last_call_only", "benchmarks/gpu_suite.py",
             'rows = earlier["rows"] + part["rows"]', 'rows = part["rows"]', GPU_SEEDS),
    Mutation("joined_seeds_keep_a_skip_made_up_for", "benchmarks/gpu_suite.py",
             'if s not in ran]', "]", GPU_SEEDS),
    Mutation("pooled_seeds_population_spread", "benchmarks/common.py",
             "statistics.stdev(values) if len", "statistics.pstdev(values) if len", GPU_SEEDS),
    Mutation("joined_report_keeps_a_later_skip", "benchmarks/gpu_suite.py",
             'if not part["status"].startswith("skipped") or name not in joined["parts"]:', "if True:",
             "tests/benchmarks/test_gpu_suite.py::test_reports_of_two_calls_join_into_one"),
    Mutation("bf16_loads_float32_weights", "hf_xlsr/evaluation/loading.py",
             'dtype = torch.bfloat16 if backend == "bf16" else None', "dtype = None",
             "tests/test_backends.py::test_the_encode_command_loads_bfloat16_weights_for_bf16"),
    Mutation("short_ivf_answers_kept", "hf_xlsr/evaluation/mining/search.py", "    if len(short):", "    if False:",
             "tests/test_mining.py::test_a_query_whose_scanned_lists_hold_too_few_vectors_is_searched_exactly"),
    Mutation("ivf_candidates_not_rescored", "hf_xlsr/evaluation/mining/search.py",
             "asked = min(k_factor * k, len(corpus)) if approximate else k", "asked = k",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("scan_only_the_floor_list", "hf_xlsr/evaluation/mining/search.py",
             "    probed[first < 0] = n_lists  # and", "    probed[:] = n_lists  # and", SCAN),
    Mutation("scan_candidates_worst_first", "hf_xlsr/evaluation/mining/search.py",
             "        key -= kept_score[:size]", "        key += kept_score[:size]", SCAN),
    Mutation("ivf_probes_a_fixed_number", "hf_xlsr/evaluation/mining/index.py",
             "min(lists // IVF_PROBE_SHARE, IVF_MAX_PROBES)", "min(lists, 16)",
             "tests/test_mining.py::test_auto_probes_a_share_of_its_lists"),
    Mutation("scan_keeps_the_padding", "hf_xlsr/evaluation/mining/search.py",
             ")[: len(block), : len(listed)]", ")[: len(block)]", SCAN),
    Mutation("search_again_against_the_whole_job", "benchmarks/bench_mining_e2e.py",
             "searched = f\"{run['search_seconds']:.1f} | {run['search_seconds'] / peer['search_seconds']:.2f}\"",
             "searched = f\"{run['search_seconds']:.1f} | {run['search_seconds'] / peer['seconds']:.2f}\"",
             "tests/benchmarks/test_bench_mining_search.py::test_an_end_to_end_size_is_searched_again_and_its_rows_name_the_index"),
    Mutation("lead_read_against_a_lossier_peer", "benchmarks/readme_tables.py",
             "and 100 * (base - row[\"retrieval_accuracy\"]) <= max(lost, 0) + TIE]", "and True]",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("no_tie_in_retrieval", "benchmarks/readme_tables.py", "<= max(lost, 0) + TIE]", "<= max(lost, 0)]",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("a_gain_demands_a_better_peer", "benchmarks/readme_tables.py", "<= max(lost, 0) + TIE]", "<= lost + TIE]",
             "tests/benchmarks/test_readme_tables.py::test_a_lead_is_read_against_the_fastest_peer_path_that_loses_no_more"),
    Mutation("peer_vectors_read_before_its_answer", "benchmarks/bench_encoding.py",
             '            self.answer("done")', "            pass",
             "tests/benchmarks/test_bench_encoding.py::test_a_peer_process_answers_each_request_with_its_own_vectors"),
    Mutation("int8_calibrated_on_the_shortest", "hf_xlsr/evaluation/encoders.py",
             "order[np.linspace(0, len(order) - 1, min(CALIBRATION, len(order))).astype(int)]",
             "order[: min(CALIBRATION, len(order))]",
             "tests/test_backends.py::test_openvino_int8_is_calibrated_on_sentences_spread_over_the_lengths_of_the_first_call"),
    Mutation("openvino_int8_left_unquantised", "hf_xlsr/evaluation/backends.py",
             "return _openvino_runner(quantize_openvino(path, calibration or [example]))",
             "return _openvino_runner(str(path))",
             "tests/test_backends.py::test_each_backend_gives_the_float32_vectors_within_its_precision"),
    Mutation("shared_encoding_reads_one_side_twice", "benchmarks/bench_mining_e2e.py",
             'SentenceFile(folder / f"{args.side}.txt")', 'SentenceFile(folder / "source.txt")', ONE_ENCODING),
    Mutation("shared_encoding_left_out_of_the_job", "benchmarks/bench_mining_e2e.py",
             'run.update(seconds=encoded + run["search_seconds"]', 'run.update(seconds=run["search_seconds"]',
             ONE_ENCODING),
    Mutation("scan_probes_the_farthest_lists", "hf_xlsr/evaluation/mining/search.py",
             ".topk(lists, dim=1).indices", ".topk(lists, dim=1, largest=False).indices", SCAN),
    Mutation("k_factor_ignored", "hf_xlsr/evaluation/mining/index.py",
             "            k_factor = int(value)", "            pass",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("k_factor_passed_to_faiss", "hf_xlsr/evaluation/mining/index.py",
             'if name.strip() != "k_factor":', "if True:",
             "tests/test_mining.py::test_one_trained_index_serves_both_directions_and_factory_strings_are_indexes"),
    Mutation("ivf_lists_ignore_the_corpus_size", "hf_xlsr/evaluation/mining/index.py",
             "lists = max(1, min(int(IVF_LISTS_PER_ROOT * math.sqrt(n)), n // 39))", "lists = 100",
             "tests/test_mining.py::test_blocks_and_ivf_agree_with_exact_search"),
    Mutation("stages_count_every_faiss_call_as_each", "benchmarks/bench_mining_search.py",
             "if function in functions:", 'if function.startswith("replacement_"):', STAGES),
    Mutation("stages_lose_the_adding", "benchmarks/bench_mining_search.py",
             '"add": ("replacement_add",), ', "", STAGES),
    Mutation("mining_goal_time_reversed", "benchmarks/bench_mining_search.py",
             'ours["seconds"] <= GOAL_TIME * peer["seconds"]', 'ours["seconds"] >= GOAL_TIME * peer["seconds"]',
             "tests/benchmarks/test_readme_tables.py::test_every_generated_table_matches_its_results_file"),
    Mutation("pairing_loop_ignores_the_rounds", "hf_xlsr/evaluation/mining/margin.py",
             "if not used_source[s] and not used_target[t]:", "if True:", PAIRING),
    # the queue against large batches, many languages
    Mutation("many_language_queue_without_meaning_ids", "benchmarks/bench_queue_vs_batch.py",
             '        data = data.add_column("label", train["example_id"])', "        pass",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("many_language_batches_with_duplicates", "benchmarks/bench_queue_vs_batch.py",
             'extra["batch_sampler"] = BatchSamplers.NO_DUPLICATES', "pass",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("many_language_dmm_without_meaning_ids", "benchmarks/bench_queue_vs_batch.py",
             'kept = [*columns, "source_language", "target_language", "example_id"] if many else columns',
             "kept = columns",
             QUEUE_VS_BATCH + "test_every_arm_of_a_many_language_run_keeps_the_meaning_of_each_row"),
    Mutation("configuration_field_left_out_of_args", "hf_xlsr/modeling/configuration_dual_momentum.py",
             "        mini_batch_size (`int`, *optional*", "        mini_batch (`int`, *optional*",
             "tests/test_layout.py::test_every_configuration_field_is_documented_where_help_and_the_api_page_show_it"),
    Mutation("evaluation_length_not_the_runs", "hf_xlsr/trainers/run.py",
             "        training_args.eval_max_length = data_args.max_length",
             "        training_args.eval_max_length = 128",
             "tests/test_cli_and_arguments.py::test_the_run_its_export_and_evaluate_give_one_figure_for_one_model"),
    # embeddings in shards
    Mutation("shards_embedded_again_on_resume", "hf_xlsr/evaluation/mining/shards.py",
             "todo = [i for i in range(process_index, count, num_processes) if not shard_path(folder, i).is_file()]",
             "todo = list(range(process_index, count, num_processes))",
             SHARDS + "test_a_job_killed_in_the_middle_resumes_to_the_same_vectors"),
    Mutation("shards_not_split_over_processes", "hf_xlsr/evaluation/mining/shards.py",
             "todo = [i for i in range(process_index, count, num_processes) if not shard_path(folder, i).is_file()]",
             "todo = [i for i in range(count) if not shard_path(folder, i).is_file()]",
             SHARDS + "test_two_processes_share_the_shards_and_give_the_vectors_of_one"),
    Mutation("shards_of_another_job_mixed_in", "hf_xlsr/evaluation/mining/shards.py",
             "        if differs is not None:", "        if False:",
             SHARDS + "test_a_folder_of_another_job_is_refused_in_one_line_before_the_model_loads"),
    Mutation("sentence_range_read_from_the_start", "hf_xlsr/data/bitext.py",
             "            handle.seek(self.offsets[begin] if begin < len(self) else 0)", "            pass",
             SHARDS + "test_a_range_of_sentences_reads_from_its_offset_and_skips_blank_lines"),
    Mutation("auto_ignores_the_memory_it_is_given", "hf_xlsr/evaluation/mining/index.py",
             "        if memory is not None and dim and 4 * n * (REDUCED_DIMENSIONS if reduced else dim) > memory:",
             "        if False:",
             "tests/test_mining.py::test_auto_keeps_the_index_within_the_memory_it_is_given"),
    Mutation("memory_counts_the_vectors_not_their_map", "hf_xlsr/evaluation/mining/index.py",
             "4 * n * (REDUCED_DIMENSIONS if reduced else dim) > memory", "4 * n * dim > memory",
             "tests/test_mining.py::test_auto_keeps_the_index_within_the_memory_it_is_given"),
    Mutation("mine_drops_the_memory", "hf_xlsr/evaluation/mining/margin.py",
             "    spec = index_spec(n, index, source_embeddings.shape[1], memory)", "    spec = index_spec(n, index)",
             "tests/test_mining.py::test_eight_bit_lists_find_the_pairs_full_lists_find"),
    Mutation("mining_job_drops_the_memory", "hf_xlsr/evaluation/mining/job.py",
             "spec = index_spec(max(map(len, sides)), index, sides[0].shape[1], memory)",
             "spec = index_spec(max(map(len, sides)), index, sides[0].shape[1])",
             "tests/test_mining.py::test_mine_memory_takes_a_size_and_reaches_the_search"),
    Mutation("mining_job_searches_finished_shards_again", "hf_xlsr/evaluation/mining/job.py",
             "if not neighbours_path(folder, direction, i).is_file()]", "]",
             "tests/test_mining_job.py::test_a_search_stopped_in_the_middle_resumes_to_the_same_pairs"),
    Mutation("mining_job_fingerprint_of_the_shape_only", "hf_xlsr/evaluation/mining/job.py",
             "hashlib.sha1(str(vectors.shape).encode() + rows.tobytes())", "hashlib.sha1(str(vectors.shape).encode())",
             "tests/test_mining_job.py::test_a_folder_of_another_search_is_refused"),
    Mutation("memory_size_counts_the_wrong_unit", "hf_xlsr_cli.py",
             'base = 1024 if (match.group(3) or "").lower() == "ib" else 1000', "base = 1024",
             "tests/test_mining.py::test_mine_memory_takes_a_size_and_reaches_the_search"),
    # GradCache inside DualMomentumModel
    Mutation("gradcache_replay_draws_new_dropout", "hf_xlsr/modeling/gradcache.py",
             "                with state, precision:", "                with precision:",
             GRADCACHE + "test_dropout_of_each_mini_batch_is_replayed_in_the_backward_pass"),
    Mutation("gradcache_replay_ignores_the_outer_gradient", "hf_xlsr/modeling/gradcache.py",
             "grad[begin:end].flatten().float()) * grad_output", "grad[begin:end].flatten().float())",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("gradcache_replay_in_float32_under_bf16", "hf_xlsr/modeling/gradcache.py",
             "enabled=torch.is_autocast_enabled(device)", "enabled=False",
             GRADCACHE + "test_the_replay_runs_in_the_forwards_bf16_autocast"),
    Mutation("gradcache_ddp_drops_the_first_mini_batches", "hf_xlsr/modeling/gradcache.py",
             "surrogate = surrogate + sum(", "surrogate = surrogate + 0 * sum(",
             GRADCACHE + "test_two_ddp_processes_train_the_cached_model_as_the_uncached_one"),
    Mutation("gradcache_grads_of_the_first_side_only", "hf_xlsr/modeling/modeling_dual_momentum.py",
             "cache_gradients(xy.loss + yx.loss, columns,", "cache_gradients(xy.loss + yx.loss, columns[:1],",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("gradcache_replay_binds_the_last_side", "hf_xlsr/modeling/modeling_dual_momentum.py",
             "def embed(begin: int, end: int, side: str = side) -> torch.Tensor:",
             "def embed(begin: int, end: int) -> torch.Tensor:",
             GRADCACHE + "test_the_cached_forward_gives_the_loss_gradients_and_queues_of_eq_3"),
    Mutation("repeated_pairs_meaning_ids_ignored", "benchmarks/bench_queue_vs_batch.py",
             'ids = "example_id" in train.column_names', "ids = many",
             QUEUE_VS_BATCH + "test_repeated_two_language_pairs_with_meaning_ids_train_as_the_gpu_comparison_trains"),
    Mutation("queue_summary_best_peer_on_the_test", "benchmarks/gpu_suite.py",
             'best = max(peers, key=lambda arm: stats[arm]["tune"][0])',
             'best = max(peers, key=lambda arm: stats[arm]["bible"][0])',
             "tests/benchmarks/test_gpu_suite.py::test_the_queue_summary_names_the_best_peer_on_the_tuning_pairs_and_its_verdict"),
    Mutation("many_language_figure_counts_zero_shot_pairs", "benchmarks/bench_queue_vs_batch.py",
             'return metrics.get("retrieval_trained_accuracy", metrics["retrieval_accuracy"])',
             'return metrics["retrieval_accuracy"]',
             QUEUE_VS_BATCH + "test_the_many_language_figure_is_the_mean_over_each_language_with_the_first"),
    # the GPU suite
    Mutation("out_of_memory_arm_loses_the_part", "benchmarks/gpu_suite.py",
             "                    except torch.OutOfMemoryError as error:\n                        row[\"error\"]",
             "                    except ZeroDivisionError as error:\n                        row[\"error\"]",
             GPU_OOM),
    Mutation("training_step_arms_timed_one_after_the_other", "benchmarks/gpu_suite.py",
             "                for _ in range(rounds):  # interleaved: the machine's drift hits every arm alike\n"
             "                    for name, (_, step, _) in group.items():",
             "                for name, (_, step, _) in group.items():\n                    for _ in range(rounds):",
             GPU_OOM),
    # encoding backends
    Mutation("int8_backend_not_quantised", "hf_xlsr/evaluation/backends.py", "            path = quantized\n",
             "            pass\n", BACKEND + "[onnx-int8]"),
    Mutation("int8_quantises_the_narrowing_products", "hf_xlsr/evaluation/backends.py",
             "nodes_to_exclude=narrowing_products(path)", "nodes_to_exclude=[]", BACKEND + "[onnx-int8]"),
    Mutation("int8_keeps_no_product_in_float32", "hf_xlsr/evaluation/backends.py",
             "if shape is not None and len(shape) == 2 and shape[0] > shape[1]:", "if False:",
             "tests/test_backends.py::test_int8_keeps_the_products_that_narrow_the_width_in_float32"),
    Mutation("bf16_backend_in_float32", "hf_xlsr/evaluation/backends.py",
             'bfloat16=backend == "bf16" or auto', "bfloat16=auto", BACKEND + "[bf16]"),
    # inputs cut to the position table
    Mutation("encoder_cut_ignores_positions", "hf_xlsr/evaluation/encoders.py",
             "max_length = min(self.max_length, model.max_tokens(language) or self.max_length)",
             "max_length = self.max_length", POSITIONS),
    Mutation("positions_without_padding_offset", M + "common.py",
             "(0 if table.padding_idx is None else table.padding_idx + 1)", "0", POSITIONS),
    Mutation("export_cut_ignores_positions", "hf_xlsr/export.py",
             "length = min(length, model.max_tokens(language) or length)", "length = length", POSITIONS),
    Mutation("every_language_on_the_first_encoder", M + "common.py",
             'return "xy"[languages.index(language)]', 'return "x"', OLD_CHECKPOINT),
    Mutation("old_tokenizer_folders_swapped", "hf_xlsr/tokenization.py",
             "zip(languages, LEGACY_FOLDERS,", "zip(languages, LEGACY_FOLDERS[::-1],", OLD_CHECKPOINT),
    Mutation("target_tokenized_as_the_source", "hf_xlsr/trainers/collators.py",
             'zip(("source", "target"), (source, target),', 'zip(("source", "target"), (source, source),',
             "tests/test_languages_as_keys.py::test_the_collator_tokenizes_each_language_with_its_own_tokenizer"),
    Mutation("one_tokenizer_kept_as_a_mapping", "hf_xlsr/tokenization.py",
             "if len(distinct) == 1 else LanguageTokenizers", "if False else LanguageTokenizers",
             KEYS + "test_a_shared_encoder_needs_no_language_and_a_mapping_of_one_tokenizer_is_one_tokenizer"),
    Mutation("old_encoders_keyed_the_wrong_way", "hf_xlsr/trainers/arguments.py",
             "{languages[0]: first or second, languages[1]: second}", "{languages[0]: second, languages[1]: first}",
             KEYS + "test_a_run_configuration_written_for_0_2_0_parses_with_a_warning_naming_the_new_fields"),
    Mutation("export_routes_with_the_first_languages_tokenizer", "hf_xlsr/export.py",
             "tokenizer_for(tokenizers, language).save_pretrained(folder)",
             "tokenizer_for(tokenizers, model.config.languages[0]).save_pretrained(folder)",
             "tests/test_languages_as_keys.py::test_a_checkpoint_written_by_0_2_0_exports_and_names_its_start"),
    Mutation("stacked_rows_name_the_languages_the_wrong_way", "hf_xlsr/data/multilingual.py",
             'add_column("source_language", [first] * n).add_column("target_language", [second] * n)',
             'add_column("source_language", [second] * n).add_column("target_language", [first] * n)',
             "tests/test_multilingual.py::test_bible_pairs_share_one_id_per_verse_across_languages"),
    Mutation("zero_shot_pairs_counted_as_trained", "hf_xlsr/evaluation/retrieval.py",
             "(trained if (a, b) in self.trained else zero_shot)",
             "(zero_shot if (a, b) in self.trained else trained)",
             EVALUATE_MANY),
    Mutation("mean_over_the_trained_pairs_only", "hf_xlsr/evaluation/retrieval.py",
             'metrics["accuracy"] = float(np.mean(trained + zero_shot))',
             'metrics["accuracy"] = float(np.mean(trained or zero_shot))', EVALUATE_MANY),
]  # fmt: skip


def run(mutation: Mutation | None, tests: list[str], python: str) -> tuple[int, float]:
    """Apply ``mutation`` (None: none) to a scratch copy and run ``tests`` there; pytest's exit code and seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "repo"
        shutil.copytree(
            ROOT,
            copy,
            ignore=shutil.ignore_patterns(".venv", "runs", "__pycache__", "*.egg-info", ".cache", ".gpukit"),
        )
        if mutation is not None:
            path = copy / mutation.file
            text = path.read_text()
            if text.count(mutation.before) != 1:
                raise SystemExit(
                    f"{mutation.name}: {mutation.file} holds {text.count(mutation.before)} copies of the line"
                )
            path.write_text(text.replace(mutation.before, mutation.after))
        start = time.time()
        result = subprocess.run(
            [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "", *tests],  # slow too
            cwd=copy, capture_output=True, text=True, env={**_environment(), "PYTHONPATH": str(copy)},
        )  # fmt: skip
        return result.returncode, time.time() - start


def _environment() -> dict:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", help="names of the mutations to run")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    tests = list(dict.fromkeys(m.test for m in chosen))
    code, seconds = run(None, tests, sys.executable)  # the unmutated copy must pass them all
    if code != 0:
        raise SystemExit(f"the tests fail without any mutation (pytest exit {code}): fix them first")
    print(f"{len(tests)} tests pass unmutated ({seconds:.0f} s)", flush=True)
    survivors = []
    for mutation in chosen:
        code, seconds = run(mutation, [mutation.test], sys.executable)
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
