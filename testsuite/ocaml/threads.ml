(* Systhreads: every OCaml thread, and the GC working for any of them,
   writes into domain 0, as OCaml 5's threads of one domain do. *)

module R = Runtime_events

type R.User.tag += Work

let work = R.User.register "threads.work" Work R.Type.int

let () =
  R.start ();
  let worker k () =
    for i = 1 to 200 do
      R.User.write work ((k * 1000) + i);
      ignore (Sys.opaque_identity (Array.make 100 i));
      if i mod 50 = 0 then Thread.yield ()
    done
  in
  let ts = List.init 4 (fun k -> Thread.create (worker k) ()) in
  List.iter Thread.join ts;
  Gc.minor ();
  let c = R.create_cursor None in
  let domains = Array.make 128 0 and works = ref 0 in
  let see d = domains.(d) <- domains.(d) + 1 in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun d _ _ -> see d)
      ~runtime_end:(fun d _ _ -> see d)
      ~lifecycle:(fun d _ _ _ -> see d)
      ()
    |> R.Callbacks.add_user_event R.Type.int (fun d _ _ _ -> see d; incr works)
  in
  ignore (R.read_poll c cbs None);
  Printf.printf "work events: %d\n" !works;
  Array.iteri
    (fun d n -> if n > 0 then Printf.printf "domain %d has events\n" d)
    domains
