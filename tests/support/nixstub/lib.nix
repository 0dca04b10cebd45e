# The few nixpkgs lib functions the generated recipes (and the stub) use.
rec {
  fix = f: let x = f x; in x;
  foldl = builtins.foldl';
  filter = builtins.filter;
  concatStringsSep = builtins.concatStringsSep;
  hasPrefix = pref: str: builtins.substring 0 (builtins.stringLength pref) str == pref;
}
