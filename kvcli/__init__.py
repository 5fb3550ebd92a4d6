"""kvcli: the command-line face of kvcore. Commands parse options and call one function each;
`kvcli.output` is the only module that writes results."""
