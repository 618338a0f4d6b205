(* An OCaml 4.13 program on the instrumented runtime that forks halfway
   (report_fork.check): parent and child each do GC-heavy rounds and
   write the user int "rounds" after each, so that `eventring report` of
   the two ring files has two processes' GC time lines and counters. *)

type Runtime_events.User.tag += Rounds

let rounds =
  Runtime_events.User.register "rounds" Rounds Runtime_events.Type.int

let table = Array.make 4096 [||]

let work n =
  for r = 1 to n do
    for i = 1 to 2000 do
      let l = List.init 40 (fun j -> i + j) in
      if i mod 7 = 0 then table.((r * 2000 + i) mod 4096) <- Array.of_list l
    done;
    Runtime_events.User.write rounds r
  done

let () =
  work 60;
  flush stdout;
  match Unix.fork () with
  | 0 -> work 60; exit 0
  | pid ->
      work 60;
      let _, st = Unix.waitpid [] pid in
      assert (st = Unix.WEXITED 0);
      print_endline "done"
