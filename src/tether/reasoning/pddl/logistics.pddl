(define (domain logistics)
  (:requirements :strips :typing)
  (:types truck package - thing place)
  (:predicates (at ?x - thing ?p - place) (in ?pkg - package ?t - truck)
               (road ?from - place ?to - place))
  (:action load
    :parameters (?pkg - package ?t - truck ?p - place)
    :precondition (and (at ?pkg ?p) (at ?t ?p))
    :effect (and (not (at ?pkg ?p)) (in ?pkg ?t)))
  (:action unload
    :parameters (?pkg - package ?t - truck ?p - place)
    :precondition (and (in ?pkg ?t) (at ?t ?p))
    :effect (and (not (in ?pkg ?t)) (at ?pkg ?p)))
  (:action drive
    :parameters (?t - truck ?from - place ?to - place)
    :precondition (and (at ?t ?from) (road ?from ?to))
    :effect (and (not (at ?t ?from)) (at ?t ?to))))
