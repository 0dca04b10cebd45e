# A stub nixpkgs for evaluating generated recipes offline (tests only; no network, no
# real nixpkgs). It has the shape the recipes use: import with { config, overlays },
# python3XXPackages.{torch,torchvision,torchaudio} with override / overrideAttrs,
# pythonPackagesExtensions, cudaPackages_* sets, openblas, fetchFromGitHub and the few
# lib functions recipes call.
{ config ? {}, overlays ? [] }:
let
  lib = import ./lib.nix;

  # A fake derivation: attrs plus override (arguments) and overrideAttrs (attributes).
  mkDrv = attrs: attrs // {
    override = args: mkDrv (attrs // (if builtins.isFunction args then args attrs else args));
    overrideAttrs = f: mkDrv (attrs // (if builtins.isFunction f then f attrs else f));
  };

  mkCuda = version: {
    cudaVersion = version;
    cuda_nvcc = { pname = "cuda_nvcc"; inherit version; };
    cudnn = { pname = "cudnn"; version = "9"; };
  };

  mkPython = final: version:
    let
      base = self: {
        pythonVersion = version;
        torch = mkDrv {
          pname = "torch";
          version = "2.8.0";
          src = { owner = "pytorch"; rev = "v2.8.0"; };
          cudaSupport = final.config.cudaSupport or false;
          cudaPackages = final.cudaPackages;
          gpuTargets = [];
          passthru = { };
          meta = { description = "PyTorch"; platforms = [ "x86_64-linux" "aarch64-linux" "aarch64-darwin" ]; };
          buildInputs = [ final.cudaPackages.cuda_nvcc final.openblas ];
          nativeBuildInputs = [ { pname = "addDriverRunpath"; } { pname = "cmake"; } ];
          cmakeFlags = [];
          preConfigure = "";
          postInstall = "";
        };
        torchvision = mkDrv {
          pname = "torchvision";
          version = "0.23.0";
          torch = self.torch;
          passthru = { };
          meta = { description = "torchvision"; platforms = [ ]; };
        };
        torchaudio = mkDrv {
          pname = "torchaudio";
          version = "2.8.0";
          torch = self.torch;
          passthru = { };
          meta = { description = "torchaudio"; platforms = [ ]; };
        };
      };
      extend = f: ext: self: let prev = f self; in prev // ext self prev;
      composed = lib.foldl extend base (final.pythonPackagesExtensions or []);
    in lib.fix composed;

  pkgsBase = final: {
    inherit lib;
    config = config;
    pythonPackagesExtensions = [];
    openblas = { pname = "openblas"; };
    fetchFromGitHub = args: { pname = "source"; } // args;
    fetchpatch = args: { pname = "patch"; } // args;
    cudaPackages_12_4 = mkCuda "12.4";
    cudaPackages_12_6 = mkCuda "12.6";
    cudaPackages_12_8 = mkCuda "12.8";
    cudaPackages_12_9 = mkCuda "12.9";
    cudaPackages_13_0 = mkCuda "13.0";
    cudaPackages_13_1 = mkCuda "13.1";
    cudaPackages = final.cudaPackages_12_8;
    python311Packages = mkPython final "3.11";
    python312Packages = mkPython final "3.12";
    python313Packages = mkPython final "3.13";
    python3Packages = final.python313Packages;
  };

  applyOverlay = f: overlay: final: let prev = f final; in prev // overlay final prev;
in
  lib.fix (lib.foldl applyOverlay pkgsBase overlays)
