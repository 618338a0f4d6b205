(* bench_ocaml_fork.ml -- what tracing adds to Unix.fork + Unix.waitpid in
   an OCaml 4.13 program (native code, the Runtime_events package).

   Issue 19 sets the target, as for C (bench/bench_fork.c): a traced fork
   and wait costs at most 100 us more than an untraced one, the child
   exiting at once.  A traced Unix.fork also waits for the child to report
   its pid, so that the parent's ring gets fork_parent
   (stdlib-bindings/runtime_events_stubs.c): that is part of the figure.
   A child that writes one user event is measured too.

   Method.  A run (this program re-executed with `--one MODE CHILD`) does
   [forks] forks, each timed from before Unix.fork to after Unix.waitpid
   returns, and prints their median in microseconds.  MODE is `untraced`
   (the package linked, tracing never started) or `traced`
   (Runtime_events.start in a private directory, one event written before
   the forks); CHILD is `exit` (Unix._exit 0 at once) or `event` (one
   user unit event first).  The children's files are removed after the
   last fork, outside the timed region (as bench_fork.c says why).  Rounds of the four runs repeat (at least 7;
   EVENTRING_BENCH_OCAML_FORK_RUNS, else EVENTRING_BENCH_RUNS), and the
   traced-minus-untraced difference and ratio are taken per round.

   Output: a table on stdout; JSON to the file EVENTRING_BENCH_OUT names,
   in bench_fork's layout. *)

module R = Runtime_events

type R.User.tag += Bench_fork

let ev = R.User.register "bench.fork" Bench_fork R.Type.unit
let forks = 41
let target_us = 100.

let rounds =
  let var v = match Sys.getenv_opt v with Some "" -> None | o -> o in
  let r = match var "EVENTRING_BENCH_OCAML_FORK_RUNS" with
    | Some s -> Some s
    | None -> var "EVENTRING_BENCH_RUNS" in
  let n = match r with
    | Some s -> (try min 51 (max 1 (int_of_string s)) with _ -> 7)
    | None -> 7 in
  max n 7

let median a =
  let a = Array.copy a in
  Array.sort compare a;
  let n = Array.length a in
  if n = 0 then 0. else if n mod 2 = 1 then a.(n / 2)
  else (a.(n / 2 - 1) +. a.(n / 2)) /. 2.

let now () = Unix.gettimeofday ()

let run_one traced event =
  if not traced && R.path () <> None then begin
    prerr_endline "bench_ocaml_fork: tracing is on (OCAML_RUNTIME_EVENTS_START \
                   is set): no untraced figure";
    exit 1
  end;
  let dir = Filename.concat (Filename.get_temp_dir_name ())
      (Printf.sprintf "bench_ocaml_fork.%d" (Unix.getpid ())) in
  if traced then begin
    Unix.mkdir dir 0o700;
    Unix.putenv "OCAML_RUNTIME_EVENTS_DIR" dir;
    R.start ();
    R.User.write ev ()
  end;
  let file pid = Filename.concat dir (Printf.sprintf "%d.events" pid) in
  let kids = ref [] in
  let t = Array.init forks (fun _ ->
      let t0 = now () in
      let pid = match Unix.fork () with
        | 0 -> if event then R.User.write ev (); Unix._exit 0
        | pid -> pid in
      let _, st = Unix.waitpid [] pid in
      let dt = (now () -. t0) *. 1e6 in
      if st <> Unix.WEXITED 0 then failwith "a child failed";
      kids := pid :: !kids;
      dt) in
  if traced then begin
    List.iter (fun pid ->
        match Sys.remove (file pid) with
        | () -> ()
        | exception Sys_error _ when not event -> ()) !kids;
    (try Sys.remove (file (Unix.getpid ())) with Sys_error _ -> ());
    (try Unix.rmdir dir with Unix.Unix_error _ -> ())
  end;
  Printf.printf "%.3f\n" (median t)

let spawn self mode child =
  let ic = Unix.open_process_args_in self [| self; "--one"; mode; child |] in
  let line = try input_line ic with End_of_file -> "" in
  match Unix.close_process_in ic, float_of_string_opt line with
  | Unix.WEXITED 0, Some v -> v
  | _ ->
      Printf.eprintf "bench_ocaml_fork: run %s %s failed\n" mode child;
      exit 1

let driver () =
  let self = Sys.executable_name in
  let kinds = [| "exit", "child _exit at once";
                 "event", "child writes one event" |] in
  let res = Array.map (fun _ ->
      (Array.make rounds 0., Array.make rounds 0.)) kinds in
  for r = 0 to rounds - 1 do
    Array.iteri (fun k (child, _) ->
        let u, t = res.(k) in
        u.(r) <- spawn self "untraced" child;
        t.(r) <- spawn self "traced" child) kinds
  done;
  let cpu =
    try
      let ic = open_in "/proc/cpuinfo" in
      let rec find () =
        let l = input_line ic in
        if String.length l > 10 && String.sub l 0 10 = "model name" then
          String.trim (List.nth (String.split_on_char ':' l) 1)
        else find () in
      let c = try find () with End_of_file -> "unknown" in
      close_in ic; c
    with Sys_error _ -> "unknown" in
  Printf.printf "Unix.fork + Unix.waitpid (OCaml 4.13, native), us, median \
                 of %d forks per run, %d rounds (each run a new process)\n\
                 cpu: %s\n\n" forks rounds cpu;
  Printf.printf "%-26s %10s %10s %10s %8s\n" "child" "untraced" "traced"
    "added" "ratio";
  let stats = Array.map (fun (u, t) ->
      let added = Array.mapi (fun i x -> x -. u.(i)) t in
      let ratio = Array.mapi (fun i x -> x /. u.(i)) t in
      (u, t, median added, median ratio)) res in
  Array.iteri (fun k (u, t, a, q) ->
      Printf.printf "%-26s %10.1f %10.1f %10.1f %8.2f\n" (snd kinds.(k))
        (median u) (median t) a q) stats;
  Printf.printf "\n(added and ratio: the median over rounds of traced \
                 minus, and over, untraced)\nthe target: a child that exits \
                 at once adds <= %.0f us\n" target_us;
  match Sys.getenv_opt "EVENTRING_BENCH_OUT" with
  | None | Some "" -> ()
  | Some f ->
      let oc = open_out f in
      let mm a = let s = Array.copy a in Array.sort compare s;
        Printf.sprintf "\"median\": %.1f, \"min\": %.1f, \"max\": %.1f"
          (median a) s.(0) s.(Array.length s - 1) in
      Printf.fprintf oc "{\n  \"unit\": \"us\",\n  \"forks_per_run\": %d,\n\
                         \  \"cpu\": \"%s\"" forks (String.escaped cpu);
      Array.iteri (fun k (u, t, a, q) ->
          Printf.fprintf oc ",\n  \"%s\": {\n    \"untraced_us\": {%s},\n\
                             \    \"traced_us\": {%s},\n\
                             \    \"added_us\": %.1f,\n    \"ratio\": %.3f,\n\
                             \    \"rounds\": %d\n  }"
            (fst kinds.(k)) (mm u) (mm t) a q rounds) stats;
      Printf.fprintf oc ",\n  \"target_added_us\": %.0f\n}\n" target_us;
      close_out oc;
      Printf.printf "figures in %s\n" f

let () =
  match Array.to_list Sys.argv with
  | [_; "--one"; ("untraced" | "traced" as m); ("exit" | "event" as c)] ->
      run_one (m = "traced") (c = "event")
  | [_] -> driver ()
  | _ -> prerr_endline "usage: bench_ocaml_fork"; exit 2
