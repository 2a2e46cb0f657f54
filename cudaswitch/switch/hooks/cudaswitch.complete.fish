
# Tab completion for cudaswitch in fish (typer's protocol; REQUEST values from the cached registry).
function __cudaswitch_complete_program
    if set -q __cudaswitch_bin; echo $__cudaswitch_bin; else; echo cudaswitch; end
end
complete --command cudaswitch --no-files --arguments "(env _CUDASWITCH_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=get-args _TYPER_COMPLETE_ARGS=(commandline -cp) (__cudaswitch_complete_program))" --condition "env _CUDASWITCH_COMPLETE=complete_fish _TYPER_COMPLETE_FISH_ACTION=is-args _TYPER_COMPLETE_ARGS=(commandline -cp) (__cudaswitch_complete_program)"
