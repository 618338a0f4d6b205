(* Reading allocates nothing per event in steady state: polling many
   events of the common kinds (phases, counters, user ints and spans) costs
   well under a word of the minor heap per event. *)

module R = Runtime_events

type R.User.tag += N | S

let n = R.User.register "alloc.n" N R.Type.int
let s = R.User.register "alloc.s" S R.Type.span

let () =
  R.start ();
  let c = R.create_cursor None in
  let seen = ref 0 and sum = ref 0 in
  let cbs =
    R.Callbacks.create
      ~runtime_begin:(fun _ _ _ -> incr seen)
      ~runtime_end:(fun _ _ _ -> incr seen)
      ~runtime_counter:(fun _ _ _ v -> incr seen; sum := !sum + v)
      ~lost_events:(fun _ _ -> ())
      ()
    |> R.Callbacks.add_user_event R.Type.int (fun _ ts _ v ->
        incr seen; ignore (Sys.opaque_identity ts); sum := !sum + v)
    |> R.Callbacks.add_user_event R.Type.span (fun _ _ _ _ -> incr seen)
  in
  let words = ref 0. and events = ref 0 in
  for round = 1 to 40 do
    for i = 1 to 3000 do
      R.User.write s R.Type.Begin;
      R.User.write n i;
      R.User.write s R.Type.End
    done;
    if round mod 10 = 0 then Gc.minor ();
    let before = Gc.minor_words () in
    let k = R.read_poll c cbs None in
    let after = Gc.minor_words () in
    (* The first poll resolves the names; from then on, steady state. *)
    if round > 1 then begin
      words := !words +. (after -. before);
      events := !events + k
    end
  done;
  let per_event = !words /. float_of_int !events in
  Printf.printf "events read: %s\n"
    (if !events >= 39 * 9000 then "all" else string_of_int !events);
  Printf.printf "minor words per event below 0.01: %b\n" (per_event < 0.01);
  if per_event >= 0.01 then Printf.eprintf "%f words per event\n" per_event
