"""Problem instances of the seed papers (one named generator each) and instances from data.

``seeds`` holds a documented generator for every instance of the seed papers (with the section
cited); ``data.from_data`` turns a feature table plus targets into an instance.
"""
from jaxbandits.instances import data, seeds  # noqa: F401
from jaxbandits.instances.base import (Buckets, Instance, as_batch, bucket_size, make_instance, pad_to, stack,  # noqa: F401
                                      validate_instance)
from jaxbandits.instances.data import from_data, load_table, rescale_unit, ridge_theta, subsample  # noqa: F401
from jaxbandits.instances.seeds import (  # noqa: F401
    TOPM_TABLE4,
    batch,
    closest_pair,
    factorial_features,
    logistic_gse,
    many_arms_code,
    many_arms_corner,
    many_arms_paper,
    multivariate_testing,
    soare_adaptive_gse,
    soare_benchmark,
    sphere_gse,
    sphere_odlinbai,
    sphere_rage,
    static_basis,
    tirinzoni_degenne_table1,
    topm_classic,
    topm_hard_top1,
    topm_random_gaussian,
    topm_table4_m,
    transductive_example,
    unit_sphere,
)
from jaxbandits.instances import karmed  # noqa: F401,E402
from jaxbandits.instances.karmed import GARIVIER_KAUFMANN_2016, garivier_kaufmann_2016, k_armed, random_k_armed  # noqa: F401,E402,E501
