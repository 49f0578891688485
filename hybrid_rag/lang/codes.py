"""The language codes a caller may name (``--lang``, ``lang=`` in a body, the ``lang`` filter): ISO
639-1, and the codes the detector (fastText's ``lid.176``) gives chunks, some of them ISO 639-3
(``als``, ``ceb``, ``yue``...), and ``und``. Anything else (``xx``) is refused by name, never read
as a language nothing is in."""

from __future__ import annotations

ISO_639_1 = frozenset(
    """
    aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy
    da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu
    hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb
    lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om
    or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw
    ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
    """.split()  # noqa: SIM905 (codes read best as words)
)
DETECTED = frozenset(  # lid.176's labels that are not ISO 639-1
    """
    als arz ast azb bar bcl bpy bxr cbk ceb ckb diq dsb dty eml frr gom hif hsb ilo jbo krc lez
    lmo lrc mai mhr min mrj mwl myv mzn nah nap nds new pam pfl pms pnb rue sah scn sco sh tyv
    vec vep vls war wuu xal xmf yue
    """.split()  # noqa: SIM905
)
KNOWN = ISO_639_1 | DETECTED | {"und"}
