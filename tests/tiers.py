"""The test tiers. `python3 -m pytest -q -m "not slow"` is the fast loop (a few minutes on the
2-core machine); `.ci/run` runs everything. A module is slow when its tests together cost the most:
real toolkits compiled or installed from mirrors, torch venvs, shells on ptys for many cases,
module systems and cluster tools, seeded hostile corpora. Measured with `--durations=0` over the
whole suite; a new module that takes more than ~10 s belongs here."""

SLOW_MODULES = frozenset({
    # corpora of hostile inputs (hundreds of cases through the real commands and shells)
    "test_hostile_corpus", "test_hostile_state", "test_hostile_interpreter", "test_hostile_local",
    "test_hostile_repo", "test_hostile_manifest", "test_hostile_archives", "test_hostile_completion",
    "test_hostile_wheels", "test_trust_round3",
    # installs from mirrors and wheels, with their signals and atomicity
    "test_install", "test_install_redist", "test_install_redist11", "test_install_atomic", "test_install_signals",
    # real `install --from pypi` with pip from local wheels: the fast tier installs nothing
    "test_install_prerelease", "test_install_site", "test_uninstall_ambiguous", "test_install_list_pypi",
    "test_install_pypi12", "test_install_leftovers", "test_install_list_offline", "test_hostile_redirect",
    # torch venvs and the planner over them, fatbinaries of the real wheel
    "test_torch_plan", "test_torch_fatbin", "test_verify_torch", "test_verify_arch", "test_verify_quick",
    # shells on ptys over many cases, module systems, Jupyter, cluster fan-out
    "test_completion", "test_switch_shells", "test_coexist_modules", "test_jupyter_kernel", "test_cluster_fanout",
    "test_first_run", "test_hints", "test_prose_width", "test_module_account", "test_torch_quiet", "test_use_module",
    "test_state_names_nothing", "test_hostile_state_names", "test_use_module_dup", "test_completion_values",
    # many real commands each: every explain wording, gcc ceilings, image builds, driver x toolkit matrix
    "test_verify_explain", "test_explain_layers", "test_explain_driver_layer", "test_verify_gcc", "test_audit_image",
    "test_gpu_check", "test_registry_bad_input",
    "test_corrupt_state", "test_list_runs_here", "test_audit_expect",
    # explain, doctor, verify and audit over the same host states (about 30 real commands)
    "test_checks_agree",
    # verify against `use` in real bash for each starting state, with real builds
    "test_switch_plan",
    # use / edit / off in real bash, zsh and fish from empty and unset path lists (~140 cases)
    "test_restore_empty",
    # small hostile images built by skopeo (writing them costs more than refusing them)
    "test_hostile_images", "test_audit_image_hostile",
    # 100,000-node merges in small and the fleet page in Chromium
    "test_audit_merge_fleet",
    # over ~10 s each: every command of the table through both parsers, every JSON shape against the
    # schema with real commands, the standard host's registry through every source
    "test_cli_table", "test_json_schemas", "test_registry_host",
    # real venvs (one with pip) and doctor/explain over each Python state
    "test_python_layer",
    # WSL roots with a gcc-built libcuda and a real toolkit each
    "test_wsl",
    # the real CUDA torch wheel, twice, with a foreign libnccl
    "test_lib_provenance",
    # two ranks of the real CPU torch, twice (gloo all_reduce on loopback)
    "test_doctor_collective",
    # over ~10 s each (measured with --durations=0, the fast tier at 3 min 50 s): real 13.1 wheels
    # linked and a complete toolkit built, every driver x toolkit verdict built for real, cached answers
    # invalidated and built again, every help page rendered, the verdict line over eleven projects
    "test_verify_complete", "test_verify_driver", "test_answers_stay_true", "test_help_pages",
    "test_verify_verdict_line",
})
